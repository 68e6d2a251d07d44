// tbb: oneTBB running the same workloads (see tbb.cpp).
#pragma once

#include <memory>

#include "../cpu_pin.hpp"
#include "../scheduler.hpp"
#include "../thread_stack.hpp"

namespace schedlab {

// pin: arena slot i on the i-th CPU this process may use while it is in the arena (--pin on,
// cpu_pin.hpp). thread_stack: the stack of every thread that runs tasks (thread_stack.hpp).
// Throws ResourceError if a tbb scheduler with another thread_stack is alive.
std::unique_ptr<Scheduler> make_tbb(unsigned threads, bool pin = kPinByDefault,
                                    std::size_t thread_stack = kDefaultThreadStackBytes);

}  // namespace schedlab
