// wakeup: Go's BenchmarkWakeupParallel shape (runtime/proc_test.go): two tasks that take turns as
// sender and receiver on two unbuffered channels, each spinning between its turns, so that each
// is readied while it is parked and the other's processor is busy (see wakeup.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

struct WakeupParams {
  std::uint64_t rounds = 500;        // turns each task takes as sender and as receiver
  std::uint64_t delay_us = 20;       // Go's delay: each task spins this long before it receives
  std::uint64_t wake_delay_us = 5;   // Go's wakeDelay: the sender spins this much longer first
};

std::unique_ptr<Workload> make_wakeup(WakeupParams params);

}  // namespace schedlab
