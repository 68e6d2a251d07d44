// central: one FIFO queue behind one mutex (see central.cpp).
#pragma once

#include <memory>

#include "../runtime/runtime.hpp"

namespace schedlab {

std::unique_ptr<Scheduler> make_central(const RuntimeConfig& config);

}  // namespace schedlab
