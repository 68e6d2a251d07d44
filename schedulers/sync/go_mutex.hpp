// go_mutex.hpp: Go's sync.Mutex (sync/mutex.go) and the runtime semaphore it parks on
// (runtime/sema.go), over a scheduler's park and ready.
//
// Which of sync.Mutex's rules are kept (all of Go 1.19's, but one):
//   - fast path: one CAS from unlocked to locked; unlock: one atomic add;
//   - spinning before parking: a task that finds the mutex locked spins up to 4 rounds of 30
//     PAUSEs while its scheduler allows it (Scheduler::may_spin, Go's runtime_canSpin: more than
//     one processor, another one running, nothing queued on its own), setting the woken flag so
//     that an unlock does not wake a parked waiter it would only race;
//   - parking: on the mutex's semaphore, FIFO for a first wait, LIFO (at the front) for a waiter
//     woken once already that lost the race again;
//   - starvation mode after 1 ms: a waiter that has waited longer than 1 ms
//     (starvationThresholdNs) switches the mutex to starvation mode, in which an unlock hands
//     the mutex straight to the first waiter (the semaphore's ticket) and newcomers queue behind
//     instead of spinning or grabbing; it switches back when the last waiter, or one that waited
//     under 1 ms, gets the mutex;
//   - the woken waiter is readied as Go readies any goroutine: steal-half puts it in the
//     unlocker's processor's runnext.
//   The one left out: after a hand-off in starvation mode Go's unlocker yields at once
//   (goyield: onto its own processor's queue), so the waiter it readied runs now; here the
//   unlocker runs on and the waiter runs from runnext when the unlocker next parks, yields or
//   ends (steal-half), or from its queue (the others).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "runtime_lock.hpp"
#include "sync_object.hpp"
#include "waiter.hpp"

namespace schedlab {

// Go's semaphore for one address (semacquire1 / semrelease1): a count, and the tasks parked on
// it in a queue.
class Semaphore {
 public:
  // Takes one unit, parking until there is one. lifo: queue at the front (a waiter that has
  // waited before). Throws DeadlockError when abandoned.
  void acquire(SyncObject& owner, Scheduler& s, bool lifo);
  // Adds one unit and readies the first waiter, if any; handoff: give it the unit directly (the
  // ticket), so that no newcomer can take it first.
  void release(Scheduler& s, bool handoff);
  std::size_t describe_waiters(std::string& out, const std::string& what) const;
  void abandon(std::vector<Waiter*>& out);

 private:
  bool try_acquire() noexcept;  // Go's cansemacquire

  std::atomic<std::uint32_t> count_{0};
  std::atomic<std::uint32_t> nwait_{0};  // tasks between announcing a wait and being dequeued
  mutable RuntimeLock lock_;             // guards queue_ and abandoned_
  WaitQueue queue_;
  bool abandoned_ = false;
};

class GoMutex final : public MutexCore {
 public:
  GoMutex(Scheduler& s, std::string name) : MutexCore(s, "mutex", std::move(name)) {}
  ~GoMutex() override { leave_registry(); }

  void lock() override {
    std::int32_t unlocked = 0;
    if (state_.compare_exchange_strong(unlocked, kLocked, std::memory_order_acquire, std::memory_order_relaxed)) return;
    lock_slow();
  }
  bool try_lock() override;
  void unlock() override {
    const std::int32_t now = state_.fetch_sub(kLocked, std::memory_order_release) - kLocked;
    if (now != 0) unlock_slow(now);
  }
  std::size_t describe_waiters(std::string& out) const override;
  void abandon(std::vector<Waiter*>& out) override { sema_.abandon(out); }

 private:
  // Go's mutexLocked, mutexWoken, mutexStarving; the waiter count above them.
  static constexpr std::int32_t kLocked = 1, kWoken = 2, kStarving = 4;
  static constexpr int kWaiterShift = 3;
  static constexpr std::uint64_t kStarvationThresholdNs = 1'000'000;  // Go: 1e6 ns

  void lock_slow();
  void unlock_slow(std::int32_t now);

  std::atomic<std::int32_t> state_{0};
  Semaphore sema_;
};

}  // namespace schedlab
