// openmp: GCC's libgomp running the same workloads (see openmp.cpp).
#pragma once

#include <memory>

#include "../scheduler.hpp"

namespace schedlab {

std::unique_ptr<Scheduler> make_openmp(unsigned threads);

}  // namespace schedlab
