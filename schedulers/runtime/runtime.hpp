// runtime.hpp: the fiber runtime every fiber scheduler shares.
//
// The runtime implements the Scheduler interface once for `fair`, `central` and `steal-half`:
// worker threads, fibers and their stack pools, spawn/join/wait with suspension, the root run,
// counters. The Policy it is built with decides where tasks go (policy.hpp).
//
// It comes in two halves. FiberRuntime (this file, runtime.cpp) is everything that is the same
// whatever the policy and off the per-task path: worker threads, the fiber pool's slow path,
// resource failures, the deadlock watch, counters and tracing. PolicyRuntime<P>
// (policy_runtime.hpp) is the per-task path: spawn, join, wait, the schedule loop and a task's
// completion, compiled once per policy so that the policy's submit and next are direct calls
// the compiler inlines rather than three virtual calls per task.
//
// A task's life:
//
//   spawn ─► policy.submit_new ─► policy.next(w) ─► invoke on w's current fiber ─► finish
//                                                        │                           │
//                          join on an unfinished child ──┘                           │
//                          (task keeps the fiber, w continues on a pooled one)       │
//                                                        ▲                           ▼
//            policy.next(w') ◄─ policy.submit_ready ◄── child done, and the waiter's fiber saved
//                 │
//                 └─► switch to the task's fiber; the loop fiber goes back to w''s pool
//
// When the machine runs out (a worker thread that cannot be started, a fiber stack that cannot
// be mapped, the memory budget: memory_budget.hpp) the run cannot finish: a task that needs a
// fiber to suspend onto and gets none can never continue. The runtime then fails as a whole:
// fail() records why, every worker leaves at its next return to the schedule loop (the one
// whose task was stuck abandons that task and returns to its native stack), and run_root throws
// a ResourceError once every worker thread has exited. No thread is left stuck to be joined;
// the abandoned tasks, their fibers and what they hold are leaked, and the runtime refuses
// further runs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "../assert.hpp"
#include "../cpu_pin.hpp"
#include "../latency.hpp"
#include "../scheduler.hpp"
#include "../stats.hpp"
#include "live_tasks.hpp"
#include "policy.hpp"
#include "poller.hpp"
#include "preemption.hpp"
#include "stack.hpp"
#include "worker.hpp"

namespace schedlab {

struct RuntimeConfig {
  unsigned threads = 1;      // worker threads that run tasks (GOMAXPROCS)
  // Upper bound for threads added by the policy (below `threads`: threads). Set by the factory
  // of a policy that adds threads (make_steal_half, from StealHalfConfig::max_threads).
  unsigned max_threads = 0;
  StackConfig stack;
  // --pin: worker i on the i-th CPU this process may use, threads added beyond `threads` on the
  // CPUs of the first `threads` workers (cpu_pin.hpp); off: the kernel places every worker.
  bool pin = kPinByDefault;
  // --netpoll: a task waiting for a socket parks on the runtime's poller (policy.hpp,
  // NetpollMode); off: it waits in the kernel inside blocking(), holding its thread.
  bool netpoll = true;
  // --preempt safepoint (Go's default, as far as safe points go): a task that has held its
  // processor for 10 ms yields at its next safe point (runtime/preemption.hpp); off: a task
  // runs until it parks, yields or ends.
  bool preempt = true;
  // --latency: record every task's scheduling delay (mark_runnable, record_delay) into a
  // histogram per worker. Off by default: two clock reads per runnable task (docs/latency.md
  // has their cost), which fork-join benchmarks of a few tens of ns per task would pay.
  bool latency = false;
};

// The policy-independent half (see the top of this file). Built only as a PolicyRuntime<P>.
class FiberRuntime : public Scheduler {
 public:
  ~FiberRuntime() override;

  CounterSet counters() const override;
  std::vector<pid_t> worker_tids() const override;
  unsigned threads() const override { return config_.threads; }
  std::optional<SchedSnapshot> snapshot() const override;
  bool trace_next_run(std::size_t max_events) override;
  std::vector<WorkerTrace> take_trace() override;

  void blocking_begin() override;
  void blocking_end() override;
  // Waiting for a socket (io_wait.cpp): parked on the poller unless the policy's
  // netpoll_mode() is off.
  PollDesc* io_register(int fd) override;
  void io_unregister(PollDesc& desc) noexcept override;
  void io_wait(int fd, PollDesc* desc, IoWait what) override;

  // ---- for policies ----------------------------------------------------------------------
  const RuntimeConfig& config() const noexcept { return config_; }
  // Workers started so far (the initial `threads`, plus any the policy added).
  unsigned worker_count() const noexcept { return worker_count_.load(std::memory_order_acquire); }
  Worker& worker(unsigned i) noexcept { return *workers_[i]; }
  // Starts one more worker thread (steal-half's spare M); nullptr at max_threads.
  Worker* add_worker();
  // Suspends the task running on the calling worker. Once its fiber is saved, `publish(task,
  // worker)` runs on another stack of the same thread and must hand the task to whoever will
  // resume it. Returns when the task is resumed, possibly on another worker.
  template <class Publish>
  void suspend_current(Publish publish) {
    suspend(current_worker(), std::move(publish));
  }
  // Counts a wake-up issued by `from` (nullptr: issued from outside the runtime's threads).
  void note_unpark(Worker* from) noexcept;

  // ---- scheduling delay: the one hook where a task becomes runnable -------------------------
  // The scheduling delay of a task is the time from its becoming runnable to its first
  // instruction on a worker (a new task's body, or a suspended task's resumption). Every path
  // that makes a task runnable calls mark_runnable(t) right before handing t to the policy:
  // PolicyRuntime's spawn and readies (a join or wait group done, a waiter requeued, a channel's
  // or a mutex's ready, a yield, a preemption), run_root, the poller's readies (io_wait.cpp;
  // steal-half's inject), steal-half's exitsyscall0. A new path calls it too: with --latency on,
  // the schedule loop asserts that every task it takes was marked (record_delay), so a path that
  // forgets is caught by the debug build's tests (tests/workloads_test.cpp runs every workload
  // under every policy so). Any thread; a clock read and a store when on.
  void mark_runnable(Task& t) noexcept {
    if (config_.latency) t.runnable_ns = now_ns();
  }
  std::optional<LatencyDistribution> take_sched_delays() override;
  // The network poller, nullptr until a task first waits for a socket (and always under
  // NetpollMode::off). Any thread.
  Poller* poller() const noexcept { return netpoll_.get(); }
  // Counts a ready made from outside the runtime's threads (the deadlock watch abandoning a
  // parked task), which no worker's counters can hold.
  void note_external_ready(WaitKind kind) noexcept {
    (kind == WaitKind::lock ? external_lock_readies_ : external_chan_readies_).fetch_add(1, std::memory_order_relaxed);
  }

 protected:
  // Attaches the policy; starts no thread (start() does, once the object is whole).
  FiberRuntime(std::unique_ptr<Policy> policy, RuntimeConfig config);
  // Starts the initial worker threads and waits until each has published its tid. Called by
  // the most derived constructor: the workers run its schedule_loop() at once. Throws a
  // ResourceError (after stopping what it started) when a thread cannot be started.
  void start();
  // Wakes every worker for good and joins every thread that was started. Idempotent; the most
  // derived destructor calls it while the object is still whole.
  void stop_and_join_workers() noexcept;
  void run_root(const std::function<void()>& root) override;

  // Runs on every pooled fiber until shutdown or a failure: PolicyRuntime<P>'s per-task loop.
  virtual void schedule_loop() = 0;

  // ---- shared by every PolicyRuntime's per-task path ---------------------------------------
  // A resource failure was recorded: every schedule loop returns at its next turn.
  bool runtime_failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  // Suspends w's running task (suspend_current, with the worker already known).
  template <class Publish>
  void suspend(Worker& w, Publish publish);
  // A fiber from w's pool, else a new one; nullptr (after fail()) when no stack can be had or
  // the memory budget would be passed.
  Fiber* take_idle_fiber(Worker& w) noexcept {
    if (Fiber* f = w.idle_fibers_.pop()) [[likely]] return f;
    return new_fiber(w);
  }
  // The root task's group has no waiter task: its last task wakes the harness thread.
  bool is_root_group(const GroupState& g) const noexcept { return &g == &root_group_; }
  // w is about to run t (the schedule loop, with --latency on): records t's scheduling delay in
  // w's histogram (see mark_runnable).
  static void record_delay(Worker& w, Task& t) noexcept {
    SCHEDLAB_ASSERT(t.runnable_ns != 0, "every task that becomes runnable is marked (FiberRuntime::mark_runnable)");
    const std::uint64_t now = now_ns();
    w.delays->record(now > t.runnable_ns ? now - t.runnable_ns : 0);
    t.runnable_ns = 0;
  }
  void root_done();

  const RuntimeConfig config_;
  const std::unique_ptr<Policy> policy_;
  LiveTaskGauge live_;

 private:
  static void fiber_entry(Fiber& self);
  // A worker thread's whole life. Nothing may escape a thread's function (that is
  // std::terminate): a worker that cannot set itself up fails the runtime and leaves.
  void worker_main(Worker& w) noexcept;
  // Binds w's thread (the caller) to its CPU under config_.pin. False, after fail(), when the
  // kernel refuses.
  bool pin(Worker& w);
  // take_idle_fiber's slow path: w's pool is empty.
  Fiber* new_fiber(Worker& w) noexcept;
  // The task running on w could not suspend (take_idle_fiber failed): leaves it suspended for
  // good and switches w's thread to its native stack, where worker_main winds the worker down.
  [[noreturn]] void abandon_current_task(Worker& w);
  // Records the first resource failure and wakes the harness thread (see the top of this file).
  // The message is copied into room reserved when the runtime was built, so that reporting an
  // out-of-memory failure needs no memory (a longer one is cut to fit when none can be had).
  void fail(std::string_view why) noexcept;
  // fail() for a worker that cannot get `what` (memory to start, its first fiber stack)
  // while starting: too many threads for the process's memory, not too many tasks.
  void fail_worker_start(const Worker& w, const char* what, const char* cause) noexcept;
  // fail() for take_idle_fiber: no fiber could be had (`cause`), with live_tasks tasks alive.
  void fail_no_fiber(const Worker& w, const char* cause, std::int64_t live_tasks) noexcept;
  std::string memory_budget_report(std::int64_t live_tasks) const;
  // Harness thread, after a failure: stops the workers, waits until every worker thread has
  // exited, throws the failure as a ResourceError.
  [[noreturn]] void throw_failure();
  // Called by the harness thread while it waits for the root: true once every worker has been
  // asleep in one sleep, unwoken, for kDeadlockAfterNs.
  bool stuck(std::uint64_t now);
  std::string deadlock_report() const;
  std::string workers_dump() const;
  // The deadlock watch found every task asleep and some parked on channels or mutexes: report
  // them, abandon their waits (every parked operation throws DeadlockError) and wait for the
  // root to unwind, then throw the report. A root that does not finish within kUnwindPatience
  // leaves the runtime deadlocked for good, as any other deadlock. Harness thread, root_mutex_
  // held by `lock` and let go while it waits.
  [[noreturn]] void break_sync_deadlock(std::unique_lock<std::mutex>& lock, std::string report);

  const std::vector<int> pin_cpus_;  // the CPUs allowed when this runtime was built, if config_.pin
  StackAllocator stacks_;  // outlives every fiber (declared before the workers)
  std::unique_ptr<std::unique_ptr<Worker>[]> workers_;  // max_threads slots, stable addresses
  std::atomic<unsigned> worker_count_{0};
  std::mutex add_worker_mutex_;
  std::atomic<std::uint64_t> external_unparks_{0};
  std::atomic<std::uint64_t> external_chan_readies_{0};
  std::atomic<std::uint64_t> external_lock_readies_{0};
  std::atomic<std::uint64_t> roots_spawned_{0};
  GroupState root_group_;  // the root task's group; its last task signals root_done_
  std::mutex root_mutex_;
  std::condition_variable root_cv_;
  bool root_done_ = false;  // guarded by root_mutex_
  // Deadlock watch (harness thread only): when every worker was first seen asleep, and in
  // which sleeps (Worker::sleep_id); a deadlocked runtime refuses further runs.
  std::uint64_t all_asleep_since_ = 0;
  std::vector<std::uint64_t> sleeps_then_;
  bool deadlocked_ = false;
  // A resource failure (see the top of this file); failure_ is written once, under root_mutex_,
  // before failed_ is set.
  std::atomic<bool> failed_{false};
  std::string failure_;  // capacity reserved at construction: kResourceMessageRoom
  // Worker threads started and not yet exited: a failed run waits for 0 before it throws.
  std::atomic<int> threads_running_{0};
  // Fibers this runtime created and charged to the memory budget; given back when it is
  // destroyed (a member, so that a constructor that throws gives them back too).
  struct FiberCharge {
    std::atomic<std::uint64_t> fibers{0};
    ~FiberCharge();
  } fiber_charge_;
  std::atomic<std::size_t> trace_cap_per_worker_{0};  // nonzero while tracing: workers added now record too
  // Last, so destroyed first: a poller thread (fair, central) is joined while the policy it
  // hands tasks to still exists.
  LazyPoller netpoll_;
  // --preempt safepoint under a policy without a monitor of its own; started by start(), stopped
  // by stop_and_join_workers() before any worker goes (it reads them).
  std::unique_ptr<PreemptMonitor> preempt_monitor_;
};

// Executed by w's thread, on the fiber of the task it suspends. The action runs on the pooled
// fiber switched to, on the same thread, so it may use w without reading the thread's worker
// again.
template <class Publish>
void FiberRuntime::suspend(Worker& w, Publish publish) {
  Task* self = w.current_task_;
  SCHEDLAB_ASSERT(self != nullptr, "only a running task suspends");
  Fiber& from = *w.current_fiber_;
  Fiber* to = take_idle_fiber(w);
  if (to == nullptr) abandon_current_task(w);
  self->fiber = &from;
  w.stats.add(Counter::suspensions);
  w.stats.add(Counter::fiber_switches);
  if (w.tracing()) w.trace.add(TraceKind::task, w.slice_begin_ns, now_ns());
  Worker* here = &w;
  switch_fiber(from, *to, [self, to, here, publish]() mutable {
    here->current_fiber_ = to;
    here->current_task_ = nullptr;
    publish(*self, *here);
  });
}

// Policy's helpers (policy.hpp), here where Worker and FiberRuntime are whole: inline, on the
// per-task path of every policy.
inline void Policy::count_push(Worker* from, Counter which) noexcept {
  SCHEDLAB_ASSERT(which == Counter::local_pushes || which == Counter::global_pushes, "a push is local or global");
  if (from != nullptr) [[likely]] {
    from->stats.add(which);
  } else {
    (which == Counter::local_pushes ? external_local_pushes_ : external_global_pushes_)
        .fetch_add(1, std::memory_order_relaxed);
  }
}

inline void Policy::note_unpark(Worker* from) noexcept { runtime_->note_unpark(from); }

// The runtime's preemption monitor marks a worker's slice; the mark is for that slice only.
// The exchange clears it, so that the task that runs next, if it inherits the slice, is marked
// only by a later round (as Go's sysmon marks each G it finds overdue).
inline bool Policy::take_preempt_request(Worker& w) {
  const std::uint32_t slice = w.slices.load(std::memory_order_relaxed);
  if (w.preempt_mark.load(std::memory_order_relaxed) != slice) return false;
  return w.preempt_mark.exchange(kNoPreemptMark, std::memory_order_relaxed) == slice;
}

// Go's active_spin rounds, when another processor may be running the holder.
inline bool Policy::may_spin(Worker& /*w*/, int iteration) const {
  constexpr int kActiveSpin = 4;  // Go: active_spin
  return iteration < kActiveSpin && runtime_->config().threads > 1;
}

}  // namespace schedlab
