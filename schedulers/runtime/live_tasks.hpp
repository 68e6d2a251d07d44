// live_tasks.hpp: the fiber runtime's count of live tasks and its peak (peak_live_tasks).
//
// Live tasks are the one figure that is global by nature. A shared atomic touched by every spawn
// and finish would put a contended cache line on the hot path, so each worker batches its
// spawns-minus-finishes and folds them into the shared gauge when the batch reaches kLiveBatch
// and whenever the worker goes idle (so a quiescent runtime's gauge is exact). The peak is
// therefore exact to within kLiveBatch per worker thread; docs/output.md states that bound.
//
// The other backends count live tasks their own way (serial exactly, on its one thread;
// os-threads with one shared atomic, noise next to a clone()), so this stays in runtime/.
#pragma once

#include <atomic>
#include <cstdint>

#include "../assert.hpp"
#include "../stats.hpp"  // SCHEDLAB_STATS

namespace schedlab {

// Tasks alive (spawned, not yet finished) and the run's peak, batched per worker.
//
// The count is flushed to the shared atomic every kLiveBatch tasks of one worker's net change,
// so that spawning and finishing cost no shared write. The peak must not be batched the same
// way: a LIFO worker's live count oscillates within a few dozen tasks (fib's recursion depth) and
// would never be flushed at all. So every increment compares the flushed total plus the
// worker's own unflushed part against the peak: two loads of lines that change once per batch,
// and a CAS only on a new peak. Exact with one worker; with several, each other worker's
// unflushed part (|batch| < kLiveBatch) is missing from the sum, so the peak is exact to within
// (workers - 1) x kLiveBatch.
//
// The shared count may dip below zero while batches are out (one worker spawned what another
// finished and flushed first); once every batch is flushed it never is: see settled().
class LiveTaskGauge {
 public:
  static constexpr std::int64_t kLiveBatch = 32;

  // Called by a worker (or the harness thread for the root) with its private batch.
  void adjust(std::int64_t& batch, std::int64_t delta) noexcept {
#if SCHEDLAB_STATS
    batch += delta;
    if (batch >= kLiveBatch || batch <= -kLiveBatch) {
      flush(batch);
    } else if (delta > 0) {
      raise_peak(live_.load(std::memory_order_relaxed) + batch);
    }
#else
    (void)batch;
    (void)delta;
#endif
  }
  // Folds `batch` into the shared count: adjust() when the batch is full, a worker when it goes
  // idle, the harness thread after counting the root.
  void flush(std::int64_t& batch) noexcept {
    const std::int64_t now = live_.fetch_add(batch, std::memory_order_relaxed) + batch;
    batch = 0;
    raise_peak(now);
  }
  void reset_peak() noexcept {
    peak_.store(live_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  // The shared count now; exact only when every batch has been flushed.
  std::int64_t current() const noexcept { return live_.load(std::memory_order_relaxed); }
  // The count when the caller knows every batch has been flushed (every worker parked, or
  // gone): exact, and never negative, since no task finishes before it was spawned. A negative
  // value means a task was finished twice or spawned without being counted.
  std::int64_t settled() const noexcept {
    const std::int64_t live = current();
    SCHEDLAB_ASSERT(live >= 0, "live tasks never negative once every batch is flushed");
    return live;
  }
  std::uint64_t peak() const noexcept {
    const std::int64_t p = peak_.load(std::memory_order_relaxed);
    return p > 0 ? static_cast<std::uint64_t>(p) : 0;
  }

 private:
  void raise_peak(std::int64_t candidate) noexcept {
    std::int64_t peak = peak_.load(std::memory_order_relaxed);
    while (candidate > peak &&
           !peak_.compare_exchange_weak(peak, candidate, std::memory_order_relaxed)) {
    }
  }

  alignas(64) std::atomic<std::int64_t> live_{0};
  alignas(64) std::atomic<std::int64_t> peak_{0};
};

}  // namespace schedlab
