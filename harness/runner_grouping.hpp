// runner_grouping.hpp: budget grouping. Every part's cases, in order, cut into configurations
// (runs of consecutive cases with one workload and its parameters), and a part's configurations
// into groups (runner_interleaving.hpp) that fit the budgets together, run one after another.
//
// Invariants: a group's worker threads stay within kLiveThreadBudget (runner_subjects.hpp) and its
// prepared inputs within kInputShare of the memory budget, unless it holds one configuration
// alone; block indices run on across the parts in plan order; a part the budgets split is named
// in RunState::grouped before its second group runs, so that a stop or a failure keeps it.
// Executed only by the runner's thread.
#pragma once

#include <vector>

#include "plan.hpp"
#include "runner.hpp"
#include "runner_state.hpp"

namespace schedlab::runner {

// Every part in order, then the --trace file. Throws what a failed run threw.
RunStatus run_blocks(const std::vector<Case>& cases, RunState& run);

}  // namespace schedlab::runner
