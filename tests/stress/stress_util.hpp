// stress_util.hpp: what the stress tests share: how much work to do in this build, a watchdog
// that turns a hang into a failure, random delays, and a seeded RNG.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "cpu_relax.hpp"
#include "scheduler.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SCHEDLAB_STRESS_SANITIZED 1
#endif

namespace schedlab::stress {

// The factor every test multiplies its amount of work by. Optimised builds do the full amount
// (10^7 queue operations per configuration); Debug and ASan a tenth; TSan a fiftieth, so that
// each test stays well under 30 s on two cores. SCHEDLAB_STRESS_SCALE overrides it (e.g. 0.01
// for a smoke run, 5 for a soak).
inline double default_scale() {
#if defined(__SANITIZE_THREAD__)
  return 0.02;
#elif defined(__SANITIZE_ADDRESS__)
  return 0.1;
#elif !defined(NDEBUG) || !defined(__OPTIMIZE__)
  return 0.1;
#else
  return 1.0;
#endif
}

inline double scale() {
  static const double s = [] {
    if (const char* env = std::getenv("SCHEDLAB_STRESS_SCALE")) {
      char* end = nullptr;
      const double v = std::strtod(env, &end);
      if (end != env && *end == '\0' && v > 0) return v;
      std::fprintf(stderr, "SCHEDLAB_STRESS_SCALE='%s' is not a positive number; using %g\n", env,
                   default_scale());
    }
    return default_scale();
  }();
  return s;
}

// n scaled, at least `floor`.
inline std::uint64_t scaled(double n, std::uint64_t floor = 1) {
  const double v = n * scale();
  return v < static_cast<double>(floor) ? floor : static_cast<std::uint64_t>(v);
}

// Seconds the watchdog allows one test. SCHEDLAB_STRESS_WATCHDOG_S overrides; the default stays
// below ctest's TIMEOUT (300 s) so that a hang reports itself with context.
inline int watchdog_seconds() {
  if (const char* env = std::getenv("SCHEDLAB_STRESS_WATCHDOG_S")) {
    const int v = std::atoi(env);
    if (v > 0) return v;
  }
#if defined(SCHEDLAB_STRESS_SANITIZED)
  return 240;
#else
  return 120;
#endif
}

// Aborts the process with a clear message if it is still alive `seconds` after construction:
// a deadlock or a lost wake-up then fails the test instead of hanging CI. `phase()` names what
// is running (scheduler, threads, seed) so the failure is reproducible; `progress`, if given,
// is called at expiry to say how far it got.
class Watchdog {
 public:
  explicit Watchdog(std::string what, int seconds = watchdog_seconds(),
                    std::function<std::string()> progress = {})
      : what_(std::move(what)), progress_(std::move(progress)) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock lock(mutex_);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
      if (cv_.wait_until(lock, deadline, [this] { return done_; })) return;
      std::string msg = "\n*** stress watchdog: '" + what_ + "' still running after " +
                        std::to_string(seconds) + " s: deadlock, lost wake-up or livelock?\n" +
                        "*** phase: " + phase_ + "\n";
      if (progress_) msg += "*** progress: " + progress_() + "\n";
      std::fputs(msg.c_str(), stderr);
      std::fflush(stderr);
      std::abort();
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void phase(std::string p) {
    std::lock_guard lock(mutex_);
    phase_ = std::move(p);
  }

 private:
  const std::string what_;
  const std::function<std::string()> progress_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string phase_ = "(starting)";
  std::thread thread_;
};

// splitmix64: a tiny, well-mixed generator; also a hash for deriving per-node seeds.
inline std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Rng {
  std::uint64_t state;
  explicit Rng(std::uint64_t seed) : state(mix64(seed)) {}
  std::uint64_t next() noexcept { return state = mix64(state); }
  // Uniform in [0, n) (n > 0); the modulo bias is irrelevant here.
  std::uint32_t below(std::uint32_t n) noexcept { return static_cast<std::uint32_t>(next() % n); }
  bool chance(std::uint32_t percent) noexcept { return below(100) < percent; }
};

// A short random delay: usually nothing, sometimes a few dozen to a few hundred spins,
// rarely a yield. Widens race windows between the load of a queue word and its CAS.
inline void random_delay(Rng& rng) {
  const std::uint32_t r = rng.below(64);
  if (r < 40) return;
  if (r < 62) {
    const std::uint32_t spins = 1 + rng.below(r < 56 ? 32 : 512);
    for (std::uint32_t i = 0; i < spins; ++i) {
      cpu_relax();
    }
    return;
  }
  std::this_thread::yield();
}

// A snapshot taken right after run() returns can miss increments that a worker makes after its
// last visible action (steal-half counts a global push after releasing the lock, by which time
// another worker may have run the task and finished the run). Re-reads the counters since
// `before`, for up to 2 s, until `consistent` holds for them; a real imbalance still shows in
// what is returned.
template <typename Consistent>
CounterSet settled_counters(const Scheduler& s, const CounterSet& before, Consistent consistent) {
  CounterSet k;
  for (int i = 0; i < 2000; ++i) {
    k = s.counters() - before;
    if (consistent(k)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return k;
}

}  // namespace schedlab::stress
