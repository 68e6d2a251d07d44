// summary.hpp: the short table `schedlab run` prints when it finishes.
#pragma once

#include <string>
#include <vector>

#include "runner.hpp"

namespace schedlab {

// Per case: median time, ns per task, speedup over serial, and time relative to tbb and to
// the fastest peer (registry.hpp) at the same threads.
std::string summary_table(const std::vector<CaseResult>& results);

}  // namespace schedlab
