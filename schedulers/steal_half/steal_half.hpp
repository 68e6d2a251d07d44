// steal-half: Go's scheduler design on schedlab's fiber runtime (see steal_half.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../runtime/runtime.hpp"
#include "run_queue.hpp"

namespace schedlab {

// Every default is Go's value (runtime/proc.go, runtime2.go), except `order`, whose default is
// the seeds' owner-LIFO rule; Go's own runq is FIFO with a one-slot LIFO `runnext`.
struct StealHalfConfig {
  std::uint32_t capacity = 256;           // local run queue slots (Go: runq [256]guintptr)
  StealAmount steal = StealAmount::half;  // Go's runqgrab: n - n/2
  std::uint32_t global_check = 61;        // look at the global queue first every Nth tick; 0: never
  LocalOrder order = LocalOrder::lifo;    // which end the owner pops
  bool handoff = true;                    // hand the P to another thread around blocking calls
  bool runnext = true;                    // a one-slot owner-only LIFO in front of the queue (Go)
};

// `max_threads` in RuntimeConfig bounds the threads started for hand-offs and wake-ups.
std::unique_ptr<Scheduler> make_steal_half(const RuntimeConfig& runtime,
                                           const StealHalfConfig& config);

}  // namespace schedlab
