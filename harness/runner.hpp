// runner.hpp: measures the planned cases and writes what they measured.
//
//   plan (plan.hpp) ─► for each block of cases sharing a workload configuration:
//                        make a Subject per case (measure.hpp), warm each up, then
//                        repetition i of every case before repetition i+1 of any
//                      ─► per repetition: Measurement ─► Row (row.hpp) ─► CSV
//                      ─► the sidecar (metadata.hpp), the summary table, the Chrome trace
//
// Simulated cases (`--counters sim`) get a SimSubject (sim_subject.hpp) and blocks of their own;
// modelled ones record footprints (measure.hpp). execute() stops at the first failed run: that case gets no row, the rows already written
// stay, and the sidecar says "failed" and why.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "plan.hpp"

namespace schedlab {

struct CaseResult {
  Case c;
  std::vector<double> wall_ns;  // one per repetition
  double tasks = 0;             // tasks per run (root included); NaN when unknown
};

enum class RunStatus { complete, failed, interrupted };

struct RunOutcome {
  RunStatus status = RunStatus::complete;
  std::string error;  // set when failed
  std::vector<CaseResult> results;
  std::size_t rows = 0;
};

// Set by the signal watcher: finish the repetition in progress, then stop.
extern std::atomic<bool> g_stop_requested;

class CsvWriter;
class HwCounters;

// Runs every case, appending rows to `csv` (created by the caller, so that an unwritable path
// is refused before anything runs) and keeping its metadata sidecar current. `events` counts
// the selected hardware/kernel events on the worker threads of each run.
RunOutcome execute(const RunRequest& request, const std::vector<Case>& cases, CsvWriter& csv,
                   HwCounters& events);

}  // namespace schedlab
