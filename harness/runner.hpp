// runner.hpp: measures the planned cases and writes what they measured.
//
//   plan (plan.hpp) ─► for each part (one RunPart: a preset's run, or the command line's):
//                        its workload configurations interleaved: repetition i of every
//                        configuration before repetition i+1 of any, each repetition of a
//                        configuration a block (its cases back to back, shuffled), each case's
//                        Subject (measure.hpp) built and warmed up when first needed
//                      ─► per block repetition: the CPUs' speed probed before and after
//                        (speed_probe.hpp); per case a Measurement ─► Row (row.hpp) ─► CSV
//                      ─► the sidecar (sidecar.hpp), the summary table, the Chrome trace
//
// Simulated cases (`--counters sim`) get a SimSubject (sim_subject.hpp) and blocks of their own;
// modelled ones record footprints (measure.hpp). execute() stops at the first failed run: that
// case gets no row, the rows already written stay, and the sidecar says "failed" and why.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "machine_timeline.hpp"
#include "plan.hpp"
#include "served_subject.hpp"

namespace schedlab {

struct CaseResult {
  Case c;
  unsigned block = 0;           // the block it ran in (the CSV's block_index)
  std::vector<double> wall_ns;  // one per repetition measured
  std::vector<unsigned> reps;   // the repetition of each wall_ns (the CSV's rep): the cases of a
                                // block with the same rep ran back to back, and pair up
  double tasks = 0;             // tasks per run (root included); NaN when unknown
};

enum class RunStatus { complete, failed, interrupted };

struct RunOutcome {
  RunStatus status = RunStatus::complete;
  std::string error;  // set when failed
  std::string sidecar_error;  // set when the sidecar could not be finished (the rows are in the CSV)
  std::vector<CaseResult> results;
  std::size_t rows = 0;
  // What the machine did during the run (machine_timeline.hpp), for the summary.
  std::vector<MachineTimeline::Episode> machine;
};

// Set by the signal watcher: finish the repetition in progress, then stop.
extern std::atomic<bool> g_stop_requested;
// Set by the signal watcher on a second stop request, before it kills the go-runtime program and
// ends the process: a repetition that fails from then on failed because of the kill, and the run
// is interrupted, not failed.
extern std::atomic<bool> g_stopping_now;

class ChromeTrace;
class CsvWriter;
class HwCounters;
class LatencyFile;
class Sidecar;

// The files a run writes, all created before the first case runs and never over an existing
// file: the --trace file (its opening written, so that a full disk shows now), the CSV with its
// header, the latency file (when a case records latency), the sidecar. Failing to create any of them is a refusal (ParamError naming the file,
// the errno and the fix), and removes those already created: a refused run leaves nothing.
class RunOutputs {
 public:
  RunOutputs(const RunRequest& r, const std::vector<Case>& cases, const HwCounters& events);
  ~RunOutputs();
  CsvWriter& csv() { return *csv_; }
  Sidecar& sidecar() { return *sidecar_; }
  // The latency file, when a case records latency (Case::records_latency); else null.
  LatencyFile* latency() { return latency_.get(); }
  ChromeTrace* trace() { return trace_.get(); }
  // The simulator's and the model's cache geometry, when a case is simulated or modelled.
  const std::optional<SimGeometry>& geometry() const { return geometry_; }

 private:
  std::optional<SimGeometry> geometry_;
  std::unique_ptr<ChromeTrace> trace_;
  std::unique_ptr<CsvWriter> csv_;
  std::unique_ptr<LatencyFile> latency_;
  std::unique_ptr<Sidecar> sidecar_;
};

// Runs every case, appending rows to the CSV and keeping the sidecar current. `events` counts the
// selected hardware/kernel events on the worker threads of each run; `servers` measure an A/B
// run's cases (served_subject.hpp, start_build_servers). Never throws for a failed run: the
// outcome says what happened.
RunOutcome execute(const RunRequest& request, const std::vector<Case>& cases, RunOutputs& outputs,
                   HwCounters& events, BuildServers servers = {});

}  // namespace schedlab
