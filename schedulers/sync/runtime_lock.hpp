// runtime_lock.hpp: the lock inside a channel or a mutex's semaphore (Go's runtime mutex,
// lock_futex.go): a word that is 0 (free), 1 (held) or 2 (held, and someone sleeps on it).
//
// Why not std::mutex. A task parks on a channel holding this lock, and the lock is released
// by the fiber runtime's switch action, after the task's fiber is saved (park's contract,
// scheduler.hpp): on another stack of the same thread, which TSan's fiber annotations treat
// as another thread, and which a pthread mutex's owner checks would refuse. This lock is plain
// atomics, which every sanitizer follows. Held for a few dozen instructions at a time: a
// contender spins a little (Go: 4 rounds of 30 PAUSEs, then one yield) before it sleeps on
// the word with a futex.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "../cpu_relax.hpp"
#include "../futex.hpp"

namespace schedlab {

class RuntimeLock {
 public:
  void lock() noexcept {
    std::uint32_t free = kFree;
    if (state_.compare_exchange_strong(free, kHeld, std::memory_order_acquire, std::memory_order_relaxed)) return;
    lock_slow();
  }
  void unlock() noexcept {
    if (state_.exchange(kFree, std::memory_order_release) == kSleepers) futex_wake(state_, 1);
  }
  // For the functions that release a lock through a pointer (Scheduler::park's `unlock`).
  static void unlock_fn(void* lock) noexcept { static_cast<RuntimeLock*>(lock)->unlock(); }

 private:
  static constexpr std::uint32_t kFree = 0, kHeld = 1, kSleepers = 2;
  static constexpr int kSpinRounds = 4;      // Go: active_spin
  static constexpr int kPausesPerRound = 30;  // Go: active_spin_cnt

  [[gnu::noinline]] void lock_slow() noexcept {
    for (int round = 0; round < kSpinRounds + 1; ++round) {
      if (round < kSpinRounds) {
        for (int i = 0; i < kPausesPerRound; ++i) cpu_relax();
      } else {
        std::this_thread::yield();  // Go: passive_spin, one osyield
      }
      std::uint32_t free = kFree;
      if (state_.load(std::memory_order_relaxed) == kFree &&
          state_.compare_exchange_strong(free, kHeld, std::memory_order_acquire, std::memory_order_relaxed)) {
        return;
      }
    }
    // Sleep until the word is free; whoever takes it this way marks it as having sleepers
    // (there may be others), so its unlock wakes the next one.
    while (state_.exchange(kSleepers, std::memory_order_acquire) != kFree) futex_wait(state_, kSleepers);
  }

  std::atomic<std::uint32_t> state_{kFree};
};

}  // namespace schedlab
