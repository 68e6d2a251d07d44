// task.hpp: the Task, schedlab's G.
//
// A Task is one spawned unit of work. Every backend runs the same Task type: the API layer
// (api.hpp) allocates it with the user's callable and a result slot, and the scheduler decides
// where and when its body runs (run_body, exactly once). The fiber runtimes (fair, central,
// steal-half) use the fields below the "fiber runtimes" line; tbb and os-threads keep their own
// per-task object in `backend`; serial needs none of them.
//
// Lifetime, without reference counting: a task spawned with spawn() is freed by its JoinHandle
// after the join; a task spawned into a WaitGroup is freed by whoever finishes it. In both cases
// the finisher's last touch of the task is the one that publishes "done", so the owner may free
// it the moment it sees that.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>

#include "assert.hpp"

namespace schedlab {

// The stack every task gets by default (--stack-size), on a fiber (runtime/stack.hpp) or an OS
// thread (os_threads): the same for both so that a --depth that overflows one overflows the
// other. 64 KiB: mmap'ed and committed only when touched, so fib's few hundred bytes per task
// cost a page or two, while recursive workloads still get room (recurse: 256 calls per 64 KiB).
inline constexpr std::size_t kDefaultTaskStackBytes = 64 * 1024;

class Fiber;
struct Task;

// The shared state behind a WaitGroup: how many of its tasks are unfinished, who waits, and the
// first exception any of them threw.
struct GroupState {
  // Low 31 bits: unfinished tasks. kWaiterBit: `waiter` (already suspended, its context saved)
  // must be made runnable by the task that takes the count to zero. One word, so "last task
  // finished" and "someone waits" are decided by one atomic operation on each side.
  static constexpr std::uint32_t kWaiterBit = 1u << 31;
  static constexpr std::uint32_t kCountMask = kWaiterBit - 1;
  std::atomic<std::uint32_t> pending{0};
  Task* waiter = nullptr;  // written before kWaiterBit is set, read after it is seen
  void* backend = nullptr;  // tbb: a tbb::task_group; os-threads: its thread list

  std::mutex error_mutex;  // exceptions are rare; a mutex keeps first_error simple
  std::exception_ptr first_error;

  void record_error(std::exception_ptr e) {
    std::lock_guard lock(error_mutex);
    if (!first_error) first_error = std::move(e);
  }
};

struct Task {
  // Runs the body; stores its result or exception in the task (or, for a group task, the
  // exception in the group). Never throws. Backends call run_body(), not this.
  void (*invoke)(Task&) noexcept = nullptr;
  // Destroys and frees the task.
  void (*destroy)(Task&) noexcept = nullptr;
  // Non-null: spawned into this WaitGroup; nobody holds a handle, the finisher frees it.
  GroupState* group = nullptr;

  // Every backend starts a body here, so the one rule they all share is checked in one place: a
  // task that is queued twice, or resumed as if it were new, would run its body a second time.
  void run_body() noexcept {
#if SCHEDLAB_ASSERTIONS
    SCHEDLAB_ASSERT(!body_started_, "a task's body is started exactly once");
    body_started_ = true;
#endif
    invoke(*this);
  }

  // ---- fiber runtimes -------------------------------------------------------------------
  // Sentinel stored in `completion` once the task has finished.
  static inline Task* const kDone = reinterpret_cast<Task*>(std::uintptr_t{1});

  Task* next = nullptr;      // intrusive link for the mutex-protected queues (TaskList)
  Fiber* fiber = nullptr;    // the fiber it is suspended on; null until its first suspension
  // nullptr: running or queued; kDone: finished; otherwise the task suspended in join() on it.
  // A waiter stores itself here (CAS from nullptr) only once its fiber is saved (from the switch
  // callback), so the finisher that sees it may queue it at once; if the finisher came first
  // (its own CAS from nullptr to kDone), the waiter's CAS fails and it queues itself. A finisher
  // that finds a waiter stores kDone plainly (runtime/policy_runtime.hpp, publish_done).
  std::atomic<Task*> completion{nullptr};
  std::uint32_t spawned_on = 0;  // processor of the spawner (migration counting)
  std::uint32_t affinity = 0;    // policy-owned: fair binds the task to this processor
  // When it last became runnable (now_ns), for its scheduling delay; 0 once that delay was
  // recorded (runtime.hpp: mark_runnable, record_delay). Left uninitialised on purpose: with
  // --latency off nothing reads it, and with it on every task is marked by its spawn before it
  // is queued, so a task's first store here costs nothing when no delay is recorded.
  std::uint64_t runnable_ns;

  // ---- other backends ---------------------------------------------------------------------
  void* backend = nullptr;

#if SCHEDLAB_ASSERTIONS
 private:
  bool body_started_ = false;  // checked builds only: Release tasks keep their size class
#endif
};

}  // namespace schedlab
