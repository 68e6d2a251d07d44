// tbb: oneTBB running the same workloads (see tbb.cpp).
#pragma once

#include <memory>

#include "../cpu_pin.hpp"
#include "../scheduler.hpp"

namespace schedlab {

// pin: arena slot i on the i-th CPU this process may use while it is in the arena (--pin on,
// cpu_pin.hpp).
std::unique_ptr<Scheduler> make_tbb(unsigned threads, bool pin = kPinByDefault);

}  // namespace schedlab
