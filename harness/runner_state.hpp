// runner_state.hpp: what the runner's parts (runner_*.cpp) share while execute() runs: the run's
// state (RunState), a configuration of a part being measured (Block) and its cases (LiveCase).
// Internal to the runner; runner.hpp is its interface.
//
// Invariants: one RunState per execute(), touched only by the runner's thread; a Block and its
// LiveCases belong to one Group (runner_interleaving.hpp), whose deque keeps their addresses put
// while the group lives; a LiveCase's result collects its rows' times in the order written.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "machine_timeline.hpp"
#include "measure.hpp"
#include "plan.hpp"
#include "runner.hpp"
#include "runner_progress.hpp"
#include "served_subject.hpp"

namespace schedlab {

class HwCounters;
class SchedTracer;
class SpeedProbe;

namespace runner {

// Everything a group of blocks needs from the run around it.
struct RunState {
  const RunRequest& request;
  RunOutputs& out;
  HwCounters& events;
  ProgressLine& progress;
  SchedTracer& schedtrace;
  SpeedProbe& probe;
  MachineTimeline& timeline;
  unsigned usable = 1;        // CPUs this process may use (case_cpus' indices run below it)
  std::size_t done = 0;       // repetitions measured so far
  unsigned next_block = 0;    // the block_index of the next configuration planned
  std::uint64_t clock = 0;    // counts uses of subjects, for least-recently-used eviction
  std::vector<CaseResult> results;
  std::mt19937_64 order;      // shuffles each repetition's blocks and cases (request.order_seed)
  nlohmann::json grouped = nlohmann::json::array();  // the parts a budget split, for the sidecar
  nlohmann::json replaced = nlohmann::json::object();  // extra repetitions per block_index, for the sidecar
  unsigned steady_waits = 0, steady_timeouts = 0;      // replacement rounds waited before, and given up on
  double steady_wait_s = 0;                            // seconds waited in all
  nlohmann::json budgets = nlohmann::json::array();    // per group: planned seconds, budget, used
  nlohmann::json unreplaced = nlohmann::json::object();  // flagged block repetitions left unreplaced, per block_index
  BuildServers servers;  // an A/B run's, by Case::build
};

// A case of the group being measured. Its subject is built when first needed and may be
// destroyed and built again (see live_subject).
struct LiveCase {
  const Case* c;
  Workload* workload;   // its block's (prepared unless every case of the block is served: A/B)
  WorkloadFacts facts;  // asked once per case: every repetition's is the same
  std::unique_ptr<Subject> subject;
  CaseResult result;
  std::uint64_t last_used = 0;
};

// One workload configuration of a part: its cases (every variant at every thread count), its
// prepared workload, its block_index. One repetition of it is a block: its cases back to back.
struct Block {
  unsigned index = 0;
  std::unique_ptr<Workload> workload;  // prepared when a case runs it in this process
  bool prepared = false;
  std::vector<LiveCase> cases;
  std::uint64_t input_bytes = 0;  // resident memory its prepare() took
  unsigned flagged = 0;   // its repetitions with a row flagged slow_cpu or noisy so far
  unsigned replaced = 0;  // extra repetitions run to replace them
  double last_repetition_s = 0;  // how long its last repetition took, probes included
};

}  // namespace runner
}  // namespace schedlab
