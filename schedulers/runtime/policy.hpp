// policy.hpp: the part of a fiber scheduler that differs between designs.
//
// The runtime (runtime.hpp) knows how to run, suspend and resume tasks on fibers, and how a
// worker sleeps. A Policy decides only where a runnable task goes and where an idle worker looks
// for the next one:
//
//      spawn ───► submit_new(t, from) ───┐                 ┌──► next(w) ──► run t on w
//  join done ──► submit_ready(t, from) ───┤                 │
//  send/unlock ► submit_woken(t, from) ───┼─► [ queues ] ───┤
//  yield, preempted ► submit_yield(t, from) ┘                 └──► (nothing: park w)
//
// `fair` keeps one queue per processor and binds each task to one; `central` has one queue for
// everybody; `steal-half` is Go's local queues with stealing and a global queue.
//
// Threading: submit_* may be called from any worker, concurrently, and from outside the runtime
// (from == nullptr: the harness thread submitting the root). next(w) is called only by w's thread.
//
// The contract. What every policy must do alike is done for it by the runtime, or by the
// helpers below that are the only way to do it:
//   - w.proc: the runtime sets it to w.index() before on_worker_added (fair and central hold
//     processor index() for life); a policy whose workers change processors writes it itself.
//   - sleeping: Worker::sleep_on(cv, lock) or Worker::park() (worker.hpp), which wrap the sleep
//     in the idle accounting (parks, idle_ns, the live-task gauge, the deadlock watch's sleep
//     ids). A policy that must sleep otherwise (steal-half blocking in the poller) brackets the
//     sleep with w.idle_begin() and w.idle_end().
//   - waking: wake(from, notify), which counts the wake-up for `from` (or as external) first.
//   - pushes: count_push(from, counter), which also counts a push from outside the runtime
//     (from == nullptr: the root, the poller thread's readied tasks) for the runtime to report.
// What stays the policy's own: counting its pops (local_pops, global_pops, tasks_stolen) and any
// moves between its queues. Conformance (conformance.hpp, tests/policy_conformance_test.cpp)
// checks all of it against what the runtime observed, for every registered policy.
#pragma once

#include <atomic>
#include <string>

#include "../counters.hpp"
#include "../task.hpp"

namespace schedlab {

class FiberRuntime;
class Worker;
struct SchedSnapshot;

// Which end of its own queue a processor takes work from. LIFO (the newest task first) is the
// seeds' rule: the task just spawned is the one whose data is in cache, and a parent's children
// finish before its siblings start, so joins succeed early and few tasks are alive at once. FIFO
// runs the oldest first (Go's own runq does this, with a one-slot LIFO `runnext` in front).
enum class LocalOrder { lifo, fifo };

// How a policy's tasks wait for a socket (api.hpp: Socket; runtime/poller.hpp).
enum class NetpollMode {
  off,         // in the kernel: poll(2) inside blocking(), the worker held (--netpoll off)
  thread,      // parked on the runtime's poller, which a thread of its own polls and readies
               // tasks from through submit_ready(t, nullptr) (fair, central)
  integrated,  // parked on the runtime's poller, which the policy's own workers poll
               // (steal-half, as Go's findRunnable and sysmon do); runtime->poller()
};

class Policy {
 public:
  virtual ~Policy() = default;

  // Called once by the runtime before any worker starts.
  virtual void attach(FiberRuntime& runtime) { runtime_ = &runtime; }
  // Called for each new worker, by the thread creating it, before the worker's thread starts
  // (also for workers the policy itself adds later with FiberRuntime::add_worker), with w.proc
  // already set to w.index().
  virtual void on_worker_added(Worker&) {}

  // `t` was just spawned by the task running on `from` (nullptr: from outside the runtime).
  virtual void submit_new(Task& t, Worker* from) = 0;
  // `t` was suspended and is runnable again; `from` is the worker whose action woke it.
  virtual void submit_ready(Task& t, Worker* from) = 0;
  // `t` was parked on a channel or mutex and the task running on `from` readied it (Go's
  // ready(); from == nullptr: the deadlock watch abandoning it). The default treats it as any
  // resumed task; steal-half counts the readies that go to runnext.
  virtual void submit_woken(Task& t, Worker* from) { submit_ready(t, from); }
  // `t`, which ran on `from`, let the others go first: yield(), or a preemption at a safe point
  // (Go's Gosched and gopreempt_m: to the back of the global queue). It must come after what is
  // queued already: a LIFO policy overrides the default (submit_ready), which would run it again
  // at once.
  virtual void submit_yield(Task& t, Worker* from) { submit_ready(t, from); }
  // Whether the task running on `w` must yield at this safe point (its time slice is over):
  // called by w's thread from safepoint()'s slow path. The default reads the mark the runtime's
  // preemption monitor leaves on w (runtime/preemption.hpp); steal-half's monitor marks its Ps.
  virtual bool take_preempt_request(Worker& w);
  // Whether a task on `w` that finds a mutex locked may spin round `iteration` (from 0) before
  // it parks (Go's runtime_canSpin). The default: 4 rounds, when there is more than one worker.
  virtual bool may_spin(Worker& w, int iteration) const;
  // The next task for `w`; parks w while there is none. nullptr once shutdown() was called.
  virtual Task* next(Worker& w) = 0;
  // Wakes every worker so that next() returns nullptr. Called once, after the last run.
  virtual void shutdown() = 0;

  // `w` is about to make a call that may block in the kernel, and has returned from it. The
  // default keeps w's processor blocked with it.
  virtual void blocking_begin(Worker&) {}
  virtual void blocking_end(Worker&) {}
  // Who polls the runtime's network poller under this policy: `thread` (the default, which
  // any policy can use) or `integrated`. Constant; --netpoll off (RuntimeConfig::netpoll)
  // overrides it with `off`.
  virtual NetpollMode netpoll_mode() const { return NetpollMode::thread; }
  // (integrated only) A task that ran on `w` has just parked on the poller, from the switch
  // action of its suspension (the poller counts it among its waiters already). steal-half wakes
  // its system monitor, which must poll while every P runs other tasks.
  virtual void on_network_wait(Worker&) {}

  // True for a policy whose own monitor preempts (steal-half's system monitor, as Go's sysmon):
  // the runtime then starts no preemption monitor of its own for --preempt safepoint.
  virtual bool preempts_itself() const { return false; }
  // A policy whose time slices are not one per task (steal-half: a task taken from runnext
  // inherits its readier's, Go's inheritTime) counts them itself; the runtime's schedule loop
  // counts one per task for the others (Worker::slices).
  static constexpr bool kOwnTimeSlices = false;

  // Adds policy-level counters (those not kept per worker) to a snapshot.
  virtual void add_counters(CounterSet&) const {}
  // Fills in the queue lengths, idle processors and spinning threads for schedtrace (the
  // runtime has set procs and threads, and idle_procs to the number of parked workers).
  // Called from any thread: read racily, never lock a hot path for it.
  virtual void describe(SchedSnapshot&) const {}
  // The policy's own state for the deadlock report: where the tasks and processors are and who
  // was told to wake, one line each, so that a lost wake-up can be reasoned about from the report
  // alone. Called only on that failure path, by the harness thread, while every worker sleeps;
  // it may take the policy's locks.
  virtual std::string dump_state() const { return {}; }

  // The pushes counted for submissions from outside the runtime (count_push with from ==
  // nullptr); FiberRuntime::counters() adds them to the workers'.
  void add_external_pushes(CounterSet& c) const noexcept {
    c[Counter::local_pushes] += external_local_pushes_.load(std::memory_order_relaxed);
    c[Counter::global_pushes] += external_global_pushes_.load(std::memory_order_relaxed);
  }

 protected:
  // Counts one push of a task submitted by `from` as `which` (local_pushes or global_pushes): on
  // from's worker, or, for from == nullptr, in the policy's external count. Any thread. Call it
  // before the task is visible to other workers: counted after, the task could run, the run end
  // and the counters be read before the count lands (TSan: central counted 1819 of 1820).
  void count_push(Worker* from, Counter which) noexcept;
  // Wakes a sleeping worker: counts the wake-up as from's (FiberRuntime::note_unpark), then
  // calls notify(). Any thread.
  template <class Notify>
  void wake(Worker* from, Notify&& notify) {
    note_unpark(from);
    notify();
  }
  void note_unpark(Worker* from) noexcept;

  FiberRuntime* runtime_ = nullptr;

 private:
  std::atomic<std::uint64_t> external_local_pushes_{0};
  std::atomic<std::uint64_t> external_global_pushes_{0};
};

}  // namespace schedlab
