// openmp: GCC's libgomp running the same workloads (see openmp.cpp).
#pragma once

#include <memory>

#include "../scheduler.hpp"

namespace schedlab {

// `pin`: team thread i on the i-th allowed CPU (cpu_pin.hpp), for as long as the scheduler lives.
std::unique_ptr<Scheduler> make_openmp(unsigned threads, bool pin);

}  // namespace schedlab
