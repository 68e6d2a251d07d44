// runner_repetition.hpp: one repetition of a block, the unit that writes rows: every case of the
// block once, between two probes of the CPUs' speed, then a row per case measured.
//
// Invariants: a row carries the machine's load and speed over its whole block repetition, on its
// case's own CPUs; every case measured gets its row, written once, even when a later case fails
// or a stop comes (then the repetition ends early). Executed only by the runner's thread.
#pragma once

#include <vector>

#include "runner_state.hpp"
#include "runner_subjects.hpp"

namespace schedlab::runner {

// One repetition `rep` of block `b`, its cases in `order`, each case's subject taken from
// `subjects`; counts the repetition in b.flagged when a row was flagged slow_cpu or noisy, and
// records its duration in b.last_repetition_s. Returns false when a stop was requested (the
// cases measured before it keep their rows). Throws what a failed run threw, or
// std::runtime_error if the CSV cannot be written.
bool run_repetition(RunState& run, SubjectCache& subjects, Block& b, const std::vector<LiveCase*>& order,
                    unsigned rep);

}  // namespace schedlab::runner
