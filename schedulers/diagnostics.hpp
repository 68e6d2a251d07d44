// diagnostics.hpp: what the harness tells the schedulers so that an abrupt end explains itself.
//
// Some ends leave no chance to run ordinary code: a stack overflow or a crash ends the
// process from a signal handler (runtime/fiber_guard.hpp, diagnostics.cpp), and a second
// interrupt ends it from the signal watcher without waiting for the run in progress. Each still
// names what was running and leaves the run's sidecar saying how the run ended, not "running":
// the harness prepares the texts beforehand (LastWords) and keeps them current; at the end they
// are only written, with async-signal-safe calls (open, write, rename).
//
// Handlers, alternate signal stacks and guard pages stay inside the schedulers; this is all of it
// a caller needs to see.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

namespace schedlab {

// The run's sidecar as each abrupt end leaves it, cut where the values known only at the end go.
// Every piece is a run of JSON text; the writer puts JSON values between them, in this order:
//   failed:      [0] "error message" [1] rows [2]
//   interrupted: [0] rows [1]
struct LastWords {
  std::string path;  // the sidecar; empty: nothing is written
  std::string tmp;   // written first, then renamed over path
  std::string failed[3];
  std::string interrupted[2];
  const std::atomic<std::size_t>* rows = nullptr;  // rows in the CSV, read at the end
};

// Replaces the prepared texts. Safe at any time, from one thread (the harness's).
void set_last_words(LastWords words);
// What a stack overflow or crash message calls the task that was running: the harness sets it
// to the case it is running.
void set_overflow_context(const char* label) noexcept;
// Installs the handlers of the fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) now, so
// that a crash before or outside a fiber run leaves its report too, and arms the calling thread
// (the harness's, on whose stack serial and the elision run tasks) for a stack overflow
// (runtime/fiber_guard.hpp); an atexit handler for a
// library that calls exit() during a run (libgomp); a terminate handler that reports a library
// thread's escaped out-of-threads or out-of-memory exception (oneTBB) as a resource failure.
// Idempotent.
void install_crash_handlers();

// ---- the writers: async-signal-safe, for signal handlers and the signal watcher ------------
// The sidecar marked failed with `error` (one line); nothing when no path is set.
void write_failed_last_words(const char* error) noexcept;
// The sidecar marked interrupted.
void write_interrupted_last_words() noexcept;
// Prints "schedlab: error: ERROR" on stderr and marks the sidecar failed with ERROR (one line):
// how every abrupt end that is not an interruption reports itself.
void report_failure(const char* error) noexcept;
// Prints "schedlab: error: the process crashed (SIGNAME) while running CONTEXT..." on stderr (or
// "was killed by SIGNAME from another process", for a signal another process sent), writes it as
// the failed sidecar's error, restores the default action of `sig` and raises it: the process
// ends as the crash it is. For the handlers of fatal signals.
void report_crash_and_die(int sig, bool sent_by_another_process) noexcept;
// The label set_overflow_context gave ("a task" before any).
const char* overflow_context() noexcept;

}  // namespace schedlab
