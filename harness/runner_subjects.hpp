// runner_subjects.hpp: the subjects (measure.hpp) of a group's cases, kept live under the thread
// budget: each built and warmed up when first needed, the least recently used destroyed to make
// room, rebuilt (and warmed up again) when next needed.
//
// Invariant: the live subjects of a group hold at most max(kLiveThreadBudget, the threads of the
// case being built) worker threads. Executed only by the runner's thread.
#pragma once

#include <deque>

#include "plan.hpp"
#include "runner_state.hpp"

namespace schedlab::runner {

// The most worker threads the live schedulers of a group may hold together (a case that needs
// more is built alone). A few times the cores of the machines this runs on: a typical part (a
// handful of schedulers at 1-8 threads over a few configurations) stays live for the whole run,
// while a long --threads sweep, or several schedulers at 150 threads under a thread limit, holds
// a bounded set.
constexpr unsigned kLiveThreadBudget = 256;

// Worker threads a case's subject keeps alive (the go-runtime program's are another process's).
unsigned live_threads(const Case& c);
unsigned live_threads(const Case* first, const Case* last);

// The subjects of the cases of `blocks` (a Group's: runner_interleaving.hpp), which outlive it.
class SubjectCache {
 public:
  SubjectCache(RunState& run, std::deque<Block>& blocks) : run_(run), blocks_(blocks) {}

  // The subject of `l`, built and warmed up now if it is not live. Invariant: the live subjects
  // of the group hold at most max(kLiveThreadBudget, l's threads) worker threads; the least
  // recently used are destroyed to make room (they are rebuilt, and warmed up again, when next
  // needed).
  Subject& live_subject(LiveCase& l);

  // Builds (and warms up) every subject of the group that is not live, when the whole group fits
  // the thread budget: outside any repetition's machine sample, as before the first repetition.
  // A group larger than the budget (one configuration alone: a long --threads sweep) builds
  // inside its repetitions (their machine load then spans those builds; their CPU time is this
  // process's, not counted as other processes').
  void build_if_all_fit();

 private:
  RunState& run_;
  std::deque<Block>& blocks_;
};

}  // namespace schedlab::runner
