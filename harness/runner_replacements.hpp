// runner_replacements.hpp: replacements of flagged repetitions. After a group's planned
// repetitions, each block repetition with a row flagged slow_cpu or noisy earns its block one
// more, in shuffled rounds, each round after a wait for a steady machine.
//
// Invariants: at most request.replace_flagged extra repetitions per block; the replacements and
// the waits before them take at most kReplacementBudgetShare of the time the group's planned
// repetitions took; the extra repetitions are numbered on from request.reps. What was replaced,
// waited and left unreplaced is kept in the RunState for the sidecar (replacements_record).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <vector>

#include "runner_state.hpp"
#include "runner_subjects.hpp"

namespace schedlab::runner {

// Replaces the flagged repetitions of `blocks` (a group's, planned repetitions done since
// `planned_start`; `orders`: per block, its cases, shuffled anew for each repetition). Returns
// false when a stop was requested. Throws what a failed run threw.
bool replace_flagged(RunState& run, SubjectCache& subjects, const std::vector<Block*>& blocks,
                     std::vector<std::vector<LiveCase*>>& orders,
                     std::chrono::steady_clock::time_point planned_start);

// The sidecar's `replacements`: the rule, its limits and what the run's groups did.
nlohmann::json replacements_record(const RunState& run);

}  // namespace schedlab::runner
