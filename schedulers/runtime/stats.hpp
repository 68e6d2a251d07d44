// stats.hpp: per-worker scheduler counters, cheap enough to leave on.
//
// Each worker thread owns one WorkerStats on its own cache lines and is its only writer, so an
// increment is a relaxed load and store (no locked instruction, no sharing); the harness reads
// them with relaxed loads between runs. Compile with SCHEDLAB_STATS=0 to remove every update
// (the cost of the counters is measured by comparing the two builds; see README).
//
// Live tasks are the one figure that is global by nature. A shared atomic touched by every spawn
// and finish would put a contended cache line on the hot path, so each worker batches its
// spawns-minus-finishes and folds them into the shared gauge when the batch reaches kLiveBatch
// and whenever the worker goes idle (so a quiescent runtime's gauge is exact). The peak is
// therefore exact to within kLiveBatch per worker thread; README states that bound.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "../counters.hpp"

#ifndef SCHEDLAB_STATS
#define SCHEDLAB_STATS 1
#endif

namespace schedlab {

inline std::uint64_t now_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

class alignas(64) WorkerStats {
 public:
  void add(Counter c, std::uint64_t n = 1) noexcept {
#if SCHEDLAB_STATS
    auto& slot = value_[static_cast<std::size_t>(c)];
    slot.store(slot.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
#else
    (void)c;
    (void)n;
#endif
  }
  std::uint64_t get(Counter c) const noexcept {
    return value_[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint64_t> value_[kCounterCount]{};
};

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
  void flush(std::int64_t& batch) noexcept {
    const std::int64_t now = live_.fetch_add(batch, std::memory_order_relaxed) + batch;
    batch = 0;
    raise_peak(now);
  }
  void reset_peak() noexcept {
    peak_.store(live_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  std::int64_t current() const noexcept { return live_.load(std::memory_order_relaxed); }
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
