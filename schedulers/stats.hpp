// stats.hpp: per-worker scheduler counters, cheap enough to leave on, and the clock they use.
//
// Each worker thread owns one WorkerStats on its own cache lines and is its only writer, so an
// increment needs no locked instruction and shares no line: on x86-64 it is one `add` to memory
// (a relaxed atomic load and store would be three instructions, and the compiler never fuses
// them), elsewhere a relaxed load and store. Other threads read them with relaxed atomic loads
// (the harness between runs). Compile with SCHEDLAB_STATS=0 to remove every update (the cost of
// the counters is measured by comparing the two builds; docs/output.md's columns say which are empty then). Every backend that keeps
// its own counters (the fiber runtime's workers, serial, tbb's arena slots) uses it.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>

#include "counters.hpp"

#ifndef SCHEDLAB_STATS
#define SCHEDLAB_STATS 1
#endif

namespace schedlab {

// CPU time (user + system) a thread has used, by its clock (pthread_getcpuclockid, or
// CLOCK_THREAD_CPUTIME_ID for the caller's); 0 if it cannot be read.
inline std::uint64_t thread_cpu_ns(clockid_t clock) noexcept {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The steady clock in nanoseconds: idle and spinning durations, trace timestamps.
inline std::uint64_t now_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

class alignas(64) WorkerStats {
 public:
  // Only by the thread that owns these counters.
  void add(Counter c, std::uint64_t n = 1) noexcept {
#if SCHEDLAB_STATS
    std::uint64_t& slot = value_[static_cast<std::size_t>(c)];
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
    // An aligned 8-byte read-modify-write by the only writer: not locked, since nobody else
    // writes the word, and its store is a single access, so a concurrent reader's atomic load
    // sees the old value or the new one. (TSan builds take the portable path: it sees atomics.)
    asm("addq %1, %0" : "+m"(slot) : "er"(n));
#else
    __atomic_store_n(&slot, __atomic_load_n(&slot, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
#endif
#else
    (void)c;
    (void)n;
#endif
  }
  // By any thread.
  std::uint64_t get(Counter c) const noexcept {
    return __atomic_load_n(&value_[static_cast<std::size_t>(c)], __ATOMIC_RELAXED);
  }

 private:
  std::uint64_t value_[kCounterCount]{};
};

}  // namespace schedlab
