// schedtrace.hpp: Go's GODEBUG=schedtrace=MS for schedlab's schedulers.
//
// Every MS milliseconds a line on stderr in Go's format, so that tools and eyes used to Go's
// output read it as is:
//
//   SCHED 12ms: gomaxprocs=2 idleprocs=0 threads=3 spinningthreads=0 runqueue=129 [3 256]
//
// gomaxprocs: processors (--threads); idleprocs: processors with nothing to do; threads: worker
// threads started (steal-half adds some for hand-offs); spinningthreads: threads looking for
// work; runqueue: the global queue (central's only queue); [..]: each processor's local queue.
// A scheduler that hides its queues (tbb, serial, os-threads) gets a line saying so.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "scheduler.hpp"

namespace schedlab {

// Go's line for one snapshot, `ms` milliseconds into the run.
std::string schedtrace_line(long long ms, const std::optional<SchedSnapshot>& s, const std::string& scheduler);

class SchedTracer {
 public:
  // interval_ms 0: disabled, no thread.
  explicit SchedTracer(unsigned interval_ms, std::FILE* out = stderr);
  ~SchedTracer();
  SchedTracer(const SchedTracer&) = delete;
  SchedTracer& operator=(const SchedTracer&) = delete;

  // The scheduler to watch from now on (nullptr: between runs, print nothing).
  void watch(const Scheduler* s, const std::string& name);

 private:
  void loop();

  const unsigned interval_ms_;
  std::FILE* out_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable cv_;
  const Scheduler* watched_ = nullptr;  // guarded by mutex_
  std::string name_;                    // guarded by mutex_
  bool stop_ = false;                   // guarded by mutex_
  std::thread thread_;
};

}  // namespace schedlab
