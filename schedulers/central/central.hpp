// central: one queue behind one mutex, FIFO by default (see central.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../runtime/runtime.hpp"

namespace schedlab {

struct CentralConfig {
  // The seeds' central queue is FIFO. LIFO (a stack: the newest task first) separates what
  // centralisation costs from what FIFO order costs (a breadth-first tree, all of it alive).
  LocalOrder order = LocalOrder::fifo;
};

std::unique_ptr<Scheduler> make_central(const RuntimeConfig& runtime, const CentralConfig& config);

// A test hook, for the A/B mode's planted regression only (tests/cli/ab_test.sh): every central
// scheduler made after this call spins `ns` nanoseconds in each spawn (submit_new), as if its
// spawn path cost that much more. Set only by `schedlab serve`, from the environment
// (served_subject.hpp, kServeTestCentralSpawnDelayEnv); `schedlab run` never calls it, and 0
// (the default) adds nothing but one test of a constant per spawn.
void set_central_test_spawn_delay_ns(std::uint64_t ns);

}  // namespace schedlab
