// central: one queue behind one mutex, FIFO by default (see central.cpp).
#pragma once

#include <memory>

#include "../runtime/runtime.hpp"

namespace schedlab {

struct CentralConfig {
  // The seeds' central queue is FIFO. LIFO (a stack: the newest task first) separates what
  // centralisation costs from what FIFO order costs (a breadth-first tree, all of it alive).
  LocalOrder order = LocalOrder::fifo;
};

std::unique_ptr<Scheduler> make_central(const RuntimeConfig& runtime, const CentralConfig& config);

}  // namespace schedlab
