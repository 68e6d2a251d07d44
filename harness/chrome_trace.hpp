// chrome_trace.hpp: --trace=FILE.json, a Chrome trace-event timeline of the runs.
//
// One process per case (named by its label), one thread track per worker: "task" slices while
// the worker runs a task, "parked" while it sleeps, "syscall" during blocking calls, and
// "steal" instants with the number of tasks taken. The first measured repetition of each case
// is traced. Opens in https://ui.perfetto.dev or chrome://tracing.
//
// Bounded: at most `max_events` events in all; what did not fit is counted, reported on stderr
// and in the file's otherData, never silently cut.
//
// The file is created (never over an existing one) and its opening written when the run starts,
// so that an unwritable path or a full disk is refused before anything runs, not found after
// every case has; the rest is written at the end. A trace that is not completed (a failed or
// interrupted run, a write that fails) is removed: no half file is left to be mistaken for one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "scheduler.hpp"

namespace schedlab {

class ChromeTrace {
 public:
  // Creates the file and writes its opening. Throws std::runtime_error naming the file, the
  // errno and the fix; a file it created is removed.
  ChromeTrace(std::string path, std::size_t max_events);
  ~ChromeTrace();
  ChromeTrace(const ChromeTrace&) = delete;
  ChromeTrace& operator=(const ChromeTrace&) = delete;

  // Events the next traced run may record (the rest of the budget).
  std::size_t budget() const noexcept { return left_; }
  // Adds one traced run that lasted [begin_ns, end_ns] (steady clock); the first run's begin_ns
  // becomes time 0 of the file. Slices are clipped to the run: a worker that parked before the
  // run began shows parked from the run's start, not from its own.
  void add_run(const std::string& label, const std::vector<WorkerTrace>& workers, std::uint64_t begin_ns,
               std::uint64_t end_ns, const std::string& note = "");
  // Writes the rest of the file. Throws std::runtime_error naming the file and the errno (the
  // file is then removed).
  void write();
  std::uint64_t dropped() const noexcept { return dropped_; }

 private:
  struct Event {
    int pid;
    unsigned tid;
    TraceEvent e;
  };
  std::string path_;
  std::FILE* file_ = nullptr;  // open until write() completes it
  bool written_ = false;
  std::size_t left_;
  std::size_t max_;
  std::vector<std::string> processes_;
  std::vector<std::vector<unsigned>> threads_;
  std::vector<Event> events_;
  std::vector<std::string> notes_;
  std::uint64_t dropped_ = 0;
  std::uint64_t origin_ns_ = 0;
};

}  // namespace schedlab
