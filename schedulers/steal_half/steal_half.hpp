// steal-half: Go's scheduler design on schedlab's fiber runtime (see steal_half.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../runtime/runtime.hpp"
#include "run_queue.hpp"
#include "sysmon.hpp"

namespace schedlab {

// What a thread does with its P around a blocking call (schedlab::blocking).
enum class HandOff {
  lazy,   // keep the P, marked in a call; take it back with one CAS on return unless the system
          // monitor retook it meanwhile (Go's entersyscall / exitsyscall and sysmon's retake)
  eager,  // hand the P to another thread at once (Go's entersyscallblock, which Go uses only for
          // its own timed sleeps): the ablation that pays a hand-off on every call
  off,    // keep the P, blocked with its thread, for the whole call
};

// Every default is Go's value (runtime/proc.go, runtime2.go), except two. `order` defaults to
// the seeds' owner-LIFO rule; Go's own runq is FIFO with a one-slot LIFO `runnext`.
// `max_threads` is 1024, not Go's sched.maxmcount of 10000: the runtime reserves a worker slot
// for every thread it may start, up front, and 1024 is the most --threads the harness accepts.
// The harness spells these defaults on its command line (harness/registry.cpp).
struct StealHalfConfig {
  std::uint32_t capacity = 256;           // local run queue slots (Go: runq [256]guintptr)
  StealAmount steal = StealAmount::half;  // Go's runqgrab: n - n/2
  std::uint32_t global_check = 61;        // look at the global queue first every Nth tick; 0: never
  LocalOrder order = LocalOrder::lifo;    // which end the owner pops
  HandOff handoff = HandOff::lazy;        // Go's system-call path
  bool runnext = true;                    // a one-slot LIFO in front of the queue (Go)
  // A thief may take a victim's runnext on its last pass, when the victim's queue is empty, after
  // sleeping 3 µs if the victim is running (Go's runqgrab). false: runnext is the owner's alone.
  bool steal_runnext = true;
  // A task taken from runnext inherits the time slice of the task that readied it and does not
  // advance the schedule tick (Go's inheritTime in runqget/execute). false: every task ticks,
  // as schedlab counted before (an ablation).
  bool runnext_inherits_tick = true;
  // Idle Ms spin (look for work holding a P, counted in nmspinning) before they park, and a new
  // task wakes an M only if none spins (Go). false: an M that finds no work in one look parks
  // at once, and every new task wakes a parked M while a P is idle (the ablation of the claim).
  bool spinning = true;
  unsigned max_threads = 1024;            // Ms at most, counting those blocked in calls and spares
  SysmonTiming sysmon;                    // the monitor of --handoff lazy (Go's values; tests change them)
};

// Builds the runtime with `runtime`, except its max_threads, which is config.max_threads: the
// bound on the threads started for hand-offs and wake-ups (never below runtime.threads).
std::unique_ptr<Scheduler> make_steal_half(const RuntimeConfig& runtime,
                                           const StealHalfConfig& config);

}  // namespace schedlab
