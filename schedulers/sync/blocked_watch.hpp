// blocked_watch.hpp: the deadlock watch of a backend without the fiber runtime's view of its
// workers (os-threads, tbb, boost-fiber): it counts its tasks blocked in a wait (on a channel,
// a mutex, a join or a wait group) and every step that may unblock one.
//
// A run is stuck when every live task has been blocked, with nothing unblocked and nothing
// readied, for kDeadlockAfterNs: no running task is left to send, unlock or finish, so nothing
// can change (the harness submits nothing while it waits for the root). The window is slack for
// a ready whose task has not yet counted itself unblocked: ready() counts progress at once,
// so such a task never looks stuck for long. A task in a blocking call or waiting for a socket
// is not counted blocked: the kernel will wake it. The backend then reports and abandons the
// parked waits (Scheduler::report_and_abandon_sync_waits), as the fiber runtime does.
#pragma once

#include <atomic>
#include <cstdint>

namespace schedlab {

class BlockedWatch {
 public:
  // As long as the fiber runtime's watch (runtime.cpp, kDeadlockAfterNs).
  static constexpr std::uint64_t kDeadlockAfterNs = 1'000'000'000;

  // A task starts or stops waiting; any thread.
  void block() noexcept {
    blocked_.fetch_add(1, std::memory_order_seq_cst);
    progress();
  }
  void unblock() noexcept {
    blocked_.fetch_sub(1, std::memory_order_seq_cst);
    progress();
  }
  // Something happened that may let a task on (a ready, a task finished); any thread.
  void progress() noexcept { steps_.fetch_add(1, std::memory_order_seq_cst); }
  std::int64_t blocked() const noexcept { return blocked_.load(std::memory_order_seq_cst); }

  // Called by the one thread that watches (the harness thread, every ~100 ms) with the live
  // tasks now: true once all of them have been blocked, with no step taken, for
  // kDeadlockAfterNs. `reset` before each run.
  bool stuck(std::int64_t alive, std::uint64_t now) noexcept {
    const std::uint64_t steps = steps_.load(std::memory_order_seq_cst);
    if (alive <= 0 || blocked() < alive || steps != steps_seen_ || since_ == 0) {
      steps_seen_ = steps;
      since_ = alive > 0 && blocked() >= alive ? now : 0;
      return false;
    }
    return now - since_ >= kDeadlockAfterNs;
  }
  void reset() noexcept { since_ = 0; }

 private:
  std::atomic<std::int64_t> blocked_{0};
  std::atomic<std::uint64_t> steps_{0};
  std::uint64_t steps_seen_ = 0;  // the watching thread's
  std::uint64_t since_ = 0;       // the watching thread's: when it first saw everyone blocked
};

}  // namespace schedlab
