// tbb: oneTBB running the same workloads (see tbb.cpp).
#pragma once

#include <memory>

#include "../scheduler.hpp"

namespace schedlab {

std::unique_ptr<Scheduler> make_tbb(unsigned threads);

}  // namespace schedlab
