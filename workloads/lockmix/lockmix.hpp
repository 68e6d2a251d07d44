// lockmix: tasks that update shared state under one mutex, with work between, at a chosen
// contention.
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

struct LockmixParams {
  std::uint64_t tasks = 8;
  std::uint64_t ops = 2000;      // critical sections per task
  std::uint64_t hold = 100;      // increments inside each critical section
  std::uint64_t between = 1000;  // increments outside, before each
};

std::unique_ptr<Workload> make_lockmix(LockmixParams params);

}  // namespace schedlab
