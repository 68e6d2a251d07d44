// worker.hpp: a Worker is an OS thread that runs tasks, Go's M.
//
// A worker runs the schedule loop on a fiber from its pool. A task it picks up runs directly on
// that fiber; if the task suspends (a join on an unfinished child), the task keeps the fiber and
// the worker continues its loop on another pooled fiber. A fiber is therefore created only when
// a task suspends and the pool is empty, and a task that never waits costs no stack switch at
// all (google/marl uses the same scheme).
//
// Fibers migrate: a task suspended on worker A may be resumed by worker B. Code that runs on a
// fiber must re-read current_worker() after every switch point (suspend, blocking_end) and
// never keep a Worker& or a thread_local address across one: glibc declares pthread_self()
// const, so the compiler may otherwise reuse the old thread's value (docs/platform.md).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <thread>

#include "../latency.hpp"
#include "../stats.hpp"
#include "../task.hpp"
#include "../trace.hpp"
#include "fiber.hpp"
#include "live_tasks.hpp"
#include "parker.hpp"

namespace schedlab {

class FiberRuntime;
template <class, bool>
class PolicyRuntime;

class alignas(64) Worker {
 public:
  static constexpr std::uint32_t kNoProc = UINT32_MAX;

  Worker(FiberRuntime& runtime, LiveTaskGauge& live, unsigned index)
      : index_(index), runtime_(&runtime), live_gauge_(&live) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  unsigned index() const noexcept { return index_; }
  // The fiber this worker's thread is running now; read by the overflow handler on this thread.
  const Fiber* current_fiber() const noexcept { return current_fiber_; }
  // Parked (in idle_begin .. idle_end) right now; read by any thread, racily, for schedtrace.
  bool parked() const noexcept { return idle_since_.load(std::memory_order_relaxed) != 0; }
  // For the deadlock check (any thread, racily): the number of the sleep this worker is in
  // (counting from 1) while it sleeps and nobody has woken it, 0 while it is awake or woken but
  // not yet running (a permit waits in its parker; on a loaded machine a woken thread may wait
  // a long time for a CPU). Two reads that return the same number bracket a stretch in which
  // the worker slept unwoken: a wake-up shows as a permit until park() has cleared the number,
  // and the next sleep has another one. Read the permit first, as here, for that to hold.
  std::uint64_t sleep_id() const noexcept {
    if (parker.notified()) return 0;
    return sleep_id_.load(std::memory_order_seq_cst);
  }
  pid_t tid() const noexcept { return tid_.load(std::memory_order_acquire); }

  // The processor (Go's P) this worker holds, kNoProc if none. Written by the policy, by this
  // worker's thread; fair and central hold processor index() for life.
  std::uint32_t proc = kNoProc;
  // Per-worker state owned by the policy (steal-half's spinning flag and hand-over slot).
  void* policy_state = nullptr;

  Parker parker;
  WorkerStats stats;
  TraceBuffer trace;  // this worker's timeline when the runtime is tracing (trace.hpp)
  // True while the runtime records a timeline; set by the harness thread between runs (the
  // root's submission orders it before the run's events). A worker woken late may still record
  // after the root finished: the buffer's lock orders that against take_trace().
  std::atomic<bool> tracing_flag{false};
  bool tracing() const noexcept { return tracing_flag.load(std::memory_order_relaxed); }
  std::int64_t live_batch = 0;  // this worker's unflushed part of the live-task gauge
  // Preemption (runtime/preemption.hpp), for a policy that counts no time slices of its own:
  // the tick of this worker's time slice, one per task it runs (written by this worker, read by
  // the preemption monitor), and the slice the monitor found overdue (kNoPreemptMark: none).
  std::atomic<std::uint32_t> slices{0};
  std::atomic<std::uint32_t> preempt_mark{UINT32_MAX};
  // The scheduling delays of the tasks this worker started or resumed (--latency on, else null;
  // runtime.hpp: mark_runnable). Written by this worker only; read and cleared between runs.
  std::unique_ptr<LatencyHistogram> delays;

  // Idle accounting around a sleep: parks, idle_ns, and the start of the current sleep so a
  // counter snapshot taken while the worker sleeps includes it.
  void idle_begin() noexcept {
    live_gauge_->flush(live_batch);
    stats.add(Counter::parks);
    idle_since_.store(now_ns(), std::memory_order_relaxed);
    sleep_id_.store(++sleeps_, std::memory_order_seq_cst);
  }
  void idle_end() noexcept {
    sleep_id_.store(0, std::memory_order_seq_cst);
    const std::uint64_t since = idle_since_.exchange(0, std::memory_order_relaxed);
    if (since == 0) return;
    const std::uint64_t now = now_ns();
    stats.add(Counter::idle_ns, now - since);
    if (tracing()) trace.add(TraceKind::park, since, now);
  }
  // Start of the task slice this worker is running (tracing only).
  std::uint64_t slice_begin_ns = 0;
  std::uint64_t syscall_begin_ns = 0;  // start of the blocking call in progress (tracing only)
  std::uint64_t idle_now_ns(std::uint64_t now) const noexcept {
    const std::uint64_t since = idle_since_.load(std::memory_order_relaxed);
    return since != 0 && now > since ? now - since : 0;
  }
  // Sleeps on `cv` (lock held, as std::condition_variable::wait) with idle accounting: how a
  // policy whose workers sleep on its own condition variables sleeps (fair, central). Only by
  // this worker.
  template <class Lock>
  void sleep_on(std::condition_variable& cv, Lock& lock) {
    idle_begin();
    cv.wait(lock);
    idle_end();
  }
  // Parks this worker's thread until unparked, with idle accounting. Only by this worker. The
  // permit is taken after idle_end(), so that sleep_id() never sees a woken worker as asleep.
  void park() noexcept {
    idle_begin();
    parker.wait();
    idle_end();
    parker.take();
  }

 private:
  friend class FiberRuntime;
  template <class, bool>
  friend class PolicyRuntime;

  const unsigned index_;
  FiberRuntime* runtime_ = nullptr;
  LiveTaskGauge* live_gauge_ = nullptr;
  std::atomic<pid_t> tid_{0};
  std::atomic<std::uint64_t> idle_since_{0};
  std::atomic<std::uint64_t> sleep_id_{0};  // see sleep_id()
  std::uint64_t sleeps_ = 0;                // sleeps begun; this worker only
  std::thread thread_;
  Fiber* native_ = nullptr;         // the thread's own stack
  Fiber* current_fiber_ = nullptr;  // the fiber running on this worker now
  Task* current_task_ = nullptr;    // the task running on it, nullptr in the loop
  FiberPool idle_fibers_;           // this worker's fiber (and stack) pool
};

// The worker whose thread runs the caller, or nullptr outside the runtime's threads. Not inlined
// and fenced, so its value is never carried across a fiber switch by the optimiser.
Worker* current_worker_or_null() noexcept;
inline Worker& current_worker() noexcept { return *current_worker_or_null(); }

}  // namespace schedlab
