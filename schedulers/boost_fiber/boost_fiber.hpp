// boost-fiber, boost-fiber-shared: Boost.Fiber running the same workloads (see boost_fiber.cpp).
#pragma once

#include <memory>

#include "../cpu_pin.hpp"
#include "../runtime/stack.hpp"
#include "../scheduler.hpp"

namespace schedlab {

// Which of Boost.Fiber's multi-thread algorithms schedules the fibers.
enum class BoostFiberAlgorithm {
  work_stealing,  // algo::work_stealing: a queue per thread, idle threads steal (boost-fiber)
  shared_work,    // algo::shared_work: one queue for every thread (boost-fiber-shared)
};

struct BoostFiberConfig {
  unsigned threads = 1;
  BoostFiberAlgorithm algorithm = BoostFiberAlgorithm::work_stealing;
  StackConfig stack;  // the same stacks as the fiber runtime's (see boost_fiber.cpp)
  bool pin = kPinByDefault;  // --pin: worker i on the i-th allowed CPU (cpu_pin.hpp)
};

std::unique_ptr<Scheduler> make_boost_fiber(const BoostFiberConfig& config);

}  // namespace schedlab
