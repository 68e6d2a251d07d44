// fair: static fair split, each task bound to one processor for life (see fair.cpp).
#pragma once

#include <memory>

#include "../runtime/runtime.hpp"

namespace schedlab {

struct FairConfig {
  LocalOrder order = LocalOrder::lifo;
};

std::unique_ptr<Scheduler> make_fair(const RuntimeConfig& runtime, const FairConfig& config);

}  // namespace schedlab
