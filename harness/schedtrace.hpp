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
//
// Cases run interleaved (each repetition shuffles them), so the lines of a case follow a header
// naming it (Case::label()), printed before its first line and again whenever the lines switch
// to another case; a run too short for a line prints no header either. The header does not
// start with "SCHED", so tools that read Go's lines skip it:
//
//   schedtrace case: steal-half fib-go(n=27 cutoff=0) threads=2
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

// The line that names the case the SCHED lines after it belong to.
std::string schedtrace_header(const std::string& case_label);

class SchedTracer {
 public:
  // interval_ms 0: disabled, no thread.
  explicit SchedTracer(unsigned interval_ms, std::FILE* out = stderr);
  ~SchedTracer();
  SchedTracer(const SchedTracer&) = delete;
  SchedTracer& operator=(const SchedTracer&) = delete;

  // The scheduler to watch from now on, named `name` in its lines, running the case `label`
  // (nullptr: between runs, print nothing).
  void watch(const Scheduler* s, const std::string& name, const std::string& label);

 private:
  void loop();

  const unsigned interval_ms_;
  std::FILE* out_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable cv_;
  const Scheduler* watched_ = nullptr;  // guarded by mutex_
  std::string name_;                    // guarded by mutex_
  std::string label_;                   // guarded by mutex_
  std::string label_printed_;           // the case of the last header; guarded by mutex_
  bool stop_ = false;                   // guarded by mutex_
  std::thread thread_;
};

}  // namespace schedlab
