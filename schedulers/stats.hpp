// stats.hpp: per-worker scheduler counters, cheap enough to leave on, and the clock they use.
//
// Each worker thread owns one WorkerStats on its own cache lines and is its only writer, so an
// increment is a relaxed load and store (no locked instruction, no sharing); the harness reads
// them with relaxed loads between runs. Compile with SCHEDLAB_STATS=0 to remove every update
// (the cost of the counters is measured by comparing the two builds; see README). Every backend
// that keeps its own counters (the fiber runtime's workers, serial, tbb's arena slots) uses it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "counters.hpp"

#ifndef SCHEDLAB_STATS
#define SCHEDLAB_STATS 1
#endif

namespace schedlab {

// The steady clock in nanoseconds: idle and spinning durations, trace timestamps.
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

}  // namespace schedlab
