// policy_runtime.hpp: the fiber runtime's per-task path, compiled once per policy.
//
// Everything a task passes through between spawn and its join (spawn, the schedule loop,
// finish, the completion protocol, join and wait) is here, as a template over the policy's
// concrete (final) type. The policy's submit_new, submit_ready and next are then direct calls
// that the compiler inlines into the loop and into spawn, instead of three virtual calls per
// task through Policy. What is not per task stays in FiberRuntime (runtime.hpp, runtime.cpp).
//
// A policy's factory builds it with make_policy_runtime (make_fair, make_central,
// make_steal_half), in the file that defines the policy, so that the policy's inline hot paths
// are visible where the loop is compiled. It is compiled twice, with and without the recording of
// scheduling delays (--latency, kRecordDelays): the recording reads the clock twice per task, and
// a runtime that does not record pays nothing for it, not even the branch (measured: 7.5
// instructions per task of steal-half fib-go when it was a branch; docs/latency.md).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "runtime.hpp"

namespace schedlab {

template <class P, bool kRecordDelays = false>
class PolicyRuntime final : public FiberRuntime {
  static_assert(std::is_base_of_v<Policy, P> && std::is_final_v<P>,
                "a policy is a final class, so that calls through its type are direct");

 public:
  PolicyRuntime(std::unique_ptr<P> policy, const RuntimeConfig& config)
      : FiberRuntime(std::move(policy), config) {
    if (config.latency != kRecordDelays) {
      throw std::logic_error("a fiber runtime with --latency " + std::string(config.latency ? "on" : "off") +
                             " is built by make_policy_runtime, which compiles its per-task path to match");
    }
    start();
  }
  // The workers run this object's schedule_loop: stop them while it is whole.
  ~PolicyRuntime() override { stop_and_join_workers(); }

  // Executed by the spawning task's worker.
  void spawn(Task& t) override {
    Worker& w = current_worker();
    t.spawned_on = w.proc;
    w.stats.add(Counter::tasks_spawned);
    live_.adjust(w.live_batch, +1);
    if constexpr (kRecordDelays) mark_runnable(t);
    policy().submit_new(t, &w);
  }

  // The completion protocol, joiner's side (task.hpp; publish_done is the finisher's). Suspend
  // first, publish the waiter after: once the action runs our context is saved, so whoever sees
  // the waiter may resume it at once. If the child finished in between, the CAS fails and we
  // requeue ourselves (a wasted switch, never a lost wake-up). t stays alive meanwhile: its
  // JoinHandle is ours.
  void join(Task& t) override {
    if (t.completion.load(std::memory_order_acquire) == Task::kDone) return;
    suspend(current_worker(), [this, child = &t](Task& me, Worker& here) {
      Task* expected = nullptr;
      if (!child->completion.compare_exchange_strong(expected, &me, std::memory_order_acq_rel,
                                                     std::memory_order_acquire)) {
        make_ready(me, here);
      }
    });
  }

  // ---- channels and mutexes (sync/): Go's gopark and ready -----------------------------------

  // Executed by the parking task. The object's lock is let go from the switch action, once the
  // task's fiber is saved: a ready() that follows may resume it at once (Go's gopark with
  // chanparkcommit / semacquire's unlock).
  void park(Waiter& waiter, void (*unlock)(void*), void* lock) override {
    Worker& w = current_worker();
    waiter.task = w.current_task_;
    w.stats.add(waiter.kind == WaitKind::lock ? Counter::lock_parks : Counter::chan_parks);
    suspend(w, [unlock, lock](Task&, Worker&) { unlock(lock); });
  }

  // Executed by the readying task (or the deadlock watch's harness thread, which is no worker).
  // The task goes where the policy puts a task woken by its worker's task (steal-half: that
  // processor's runnext); it counts as migrated if it then runs on another processor.
  void ready(Waiter& waiter) override {
    Task& t = *waiter.task;
    Worker* w = current_worker_or_null();
    if (w != nullptr) {
      w->stats.add(waiter.kind == WaitKind::lock ? Counter::lock_readies : Counter::chan_readies);
      t.spawned_on = w->proc;
    } else {
      note_external_ready(waiter.kind);
      t.spawned_on = Worker::kNoProc;
    }
    if constexpr (kRecordDelays) mark_runnable(t);
    policy().submit_woken(t, w);
  }

  // Go's Gosched.
  void yield() override {
    Worker& w = current_worker();
    w.stats.add(Counter::yields);
    suspend(w, [this](Task& me, Worker& here) { requeue(me, here); });
  }

  // safepoint()'s slow path: Go's gopreempt_m when the monitor has marked this task's slice.
  void preempt_point() override {
    Worker* w = current_worker_or_null();
    if (w == nullptr || w->current_task_ == nullptr || !policy().take_preempt_request(*w)) return;
    w->stats.add(Counter::preemptions);
    suspend(*w, [this](Task& me, Worker& here) { requeue(me, here); });
  }

  bool may_spin(int iteration) const override {
    Worker* w = current_worker_or_null();
    return w != nullptr && static_cast<const P&>(*policy_).may_spin(*w, iteration);
  }

  void wait(GroupState& g) override {
    if ((g.pending.load(std::memory_order_acquire) & GroupState::kCountMask) != 0) {
      // As in join: publish the waiter from the action, once our context is saved.
      suspend(current_worker(), [this, group = &g](Task& me, Worker& here) {
        group->waiter = &me;
        const std::uint32_t before = group->pending.fetch_or(GroupState::kWaiterBit, std::memory_order_acq_rel);
        if ((before & GroupState::kCountMask) == 0) make_ready(me, here);
      });
    }
    // Every task of the group has finished; nobody else touches the word now.
    g.pending.store(0, std::memory_order_relaxed);
    g.waiter = nullptr;
  }

 private:
  P& policy() noexcept { return static_cast<P&>(*policy_); }

  // A suspended task is runnable again, readied by the task that ran on `from` (a join or a
  // wait group done): through the hook every runnable task passes (mark_runnable), to the policy.
  void make_ready(Task& t, Worker& from) {
    if constexpr (kRecordDelays) mark_runnable(t);
    policy().submit_ready(t, &from);
  }
  // The task that ran on `from` yielded or was preempted, and is runnable again at once (its
  // wait for the processor is a scheduling delay, as in Go's gopreempt_m: _Grunning to
  // _Grunnable): through the hook, to the back of the policy's queues.
  void requeue(Task& t, Worker& from) {
    if constexpr (kRecordDelays) mark_runnable(t);
    policy().submit_yield(t, &from);
  }

  // Runs on a pooled fiber. The fiber changes workers in two ways: a task that ran on it
  // suspended and was resumed elsewhere (its body returns on that worker), or the loop switched
  // to a suspended task and was later taken out of another worker's pool. `w` is read again
  // after each, and only then: between them the loop stays on one thread (worker.hpp).
  void schedule_loop() override {
    Worker* w = &current_worker();
    for (;;) {
      if (runtime_failed()) return;
      Task* t = policy().next(*w);
      if (t == nullptr) return;  // shutdown
      SCHEDLAB_ASSERT(w->current_task_ == nullptr, "the schedule loop runs between tasks, never inside one");
      if (t->spawned_on != w->proc && t->spawned_on != Worker::kNoProc) w->stats.add(Counter::migrations);
      if constexpr (kRecordDelays) record_delay(*w, *t);
      if constexpr (!P::kOwnTimeSlices) {
        // A time slice per task, for the preemption monitor (a single writer: no locked add).
        w->slices.store(w->slices.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      }
      if (w->tracing()) w->slice_begin_ns = now_ns();
      if (t->fiber == nullptr) {
        // A new task: run it right here, on this fiber.
        w->current_task_ = t;
        t->run_body();
        // Set once it suspended: this fiber went with it, and it finished wherever it resumed.
        if (t->fiber != nullptr) w = &current_worker();
        finish(*t, *w);
      } else {
        // A suspended task: switch to its fiber; this loop fiber goes back to the pool and
        // continues from here when some worker takes it out again.
        Fiber* self = w->current_fiber_;
        w->stats.add(Counter::fiber_switches);
        switch_fiber(*self, *t->fiber, [t, self, here = w] {
          here->current_fiber_ = t->fiber;
          here->current_task_ = t;
          here->idle_fibers_.push(self);
        });
        // Taken out of a pool again: by a suspending task, or by worker_main to exit.
        w = &current_worker();
        if (w->current_fiber_->exit_requested()) return;
      }
    }
  }

  // Executed on the fiber that ran t, by the worker it finished on, right after its body.
  void finish(Task& t, Worker& w) {
    SCHEDLAB_ASSERT(&w == current_worker_or_null() && w.current_task_ == &t,
                    "a task finishes on the worker that is running it");
    w.current_task_ = nullptr;
    w.stats.add(Counter::tasks_executed);
    if (w.tracing()) w.trace.add(TraceKind::task, w.slice_begin_ns, now_ns());
    live_.adjust(w.live_batch, -1);
    if (GroupState* g = t.group) {
      t.destroy(t);  // nobody else holds a group task
      group_task_done(*g, w);
    } else {
      publish_done(t, w);
    }
  }

  // The completion protocol (task.hpp): the word is nullptr until either the finisher stores
  // kDone or a waiter, once its fiber is saved, stores itself, each with a CAS from nullptr; the
  // loser of that race sees the winner's value. Once a waiter has registered, nobody but the
  // finisher writes the word again (the waiter sleeps until the finisher readies it), so the
  // finisher that finds a waiter publishes kDone with a plain store: no locked instruction on
  // the path where a parent joined its child before the child finished (at one worker, every
  // other task of fib-go). Publishing kDone is the last touch: the JoinHandle may free t once it
  // sees it.
  void publish_done(Task& t, Worker& w) {
    Task* waiter = t.completion.load(std::memory_order_acquire);
    if (waiter == nullptr && t.completion.compare_exchange_strong(waiter, Task::kDone, std::memory_order_acq_rel,
                                                                  std::memory_order_acquire)) {
      return;  // nobody waits yet; a joiner will find kDone
    }
    SCHEDLAB_ASSERT(waiter != nullptr && waiter != Task::kDone, "a task finishes once, and a registered waiter stays");
    t.completion.store(Task::kDone, std::memory_order_release);
    make_ready(*waiter, w);
  }

  void group_task_done(GroupState& g, Worker& w) {
    const std::uint32_t prev = g.pending.fetch_sub(1, std::memory_order_acq_rel);
    SCHEDLAB_ASSERT((prev & GroupState::kCountMask) != 0, "a WaitGroup's count never goes below zero");
    if ((prev & GroupState::kCountMask) != 1) return;
    if (is_root_group(g)) {
      root_done();
    } else if ((prev & GroupState::kWaiterBit) != 0) {
      make_ready(*g.waiter, w);  // after this the waiter may resume and destroy g
    }
  }
};

// The runtime of policy P, its per-task path compiled with the recording of scheduling delays
// when config.latency asks for it, without otherwise (see the top of this file).
template <class P>
std::unique_ptr<FiberRuntime> make_policy_runtime(std::unique_ptr<P> policy, const RuntimeConfig& config) {
  if (config.latency) return std::make_unique<PolicyRuntime<P, true>>(std::move(policy), config);
  return std::make_unique<PolicyRuntime<P, false>>(std::move(policy), config);
}

}  // namespace schedlab
