// summary.hpp: the short table `schedlab run` prints when it finishes (see summary.cpp).
#pragma once

#include <string>
#include <vector>

#include "runner.hpp"

namespace schedlab {

// Per case: median time ± standard deviation, ns per task, speedup over serial, time relative to
// tbb and to the fastest peer (registry.hpp) at the same threads, and the noisy / short marks;
// then the paired comparisons ("A ran 1.31× [1.22, 1.40] faster than B") and a legend. Cases without a repetition are left out.
std::string summary_table(const std::vector<CaseResult>& results);

}  // namespace schedlab
