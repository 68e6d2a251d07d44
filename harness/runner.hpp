// runner.hpp: from a request (CLI or preset) to rows in a CSV.
//
//   RunRequest ──plan()──► cases (scheduler × its params) × (workload × its params) × threads
//              ──execute()──► per case: build scheduler, prepare workload, warm up, then each
//                             repetition: counters before ─ run ─ counters after ─ check ─ row
//
// Everything that can be refused is refused by plan(), before the first run, so a typo does not
// cost a half-finished benchmark. execute() stops at the first wrong result: that case gets no
// row, the rows already written stay, and the sidecar says "failed" and why.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "params.hpp"
#include "registry.hpp"

namespace schedlab {

// One cross product: these schedulers x these workloads x these thread counts x every
// combination of the parameter values.
struct RunPart {
  std::vector<std::string> schedulers;
  std::vector<std::string> workloads;
  std::vector<unsigned> threads{1};
  // Parameter name -> values; several values sweep that parameter.
  std::map<std::string, std::vector<std::string>> params;
};

struct RunRequest {
  std::vector<RunPart> parts;  // the CLI makes one; a preset may list several
  unsigned reps = 5;
  unsigned warmup = 1;  // untimed runs before the repetitions (pools filled, caches warm)
  std::string out_path;  // the CSV; its sidecar is derived from it
  std::string preset;    // the preset this request came from, or empty
  std::vector<std::string> command_line;
  bool progress = false;  // print a progress line on stderr
  std::string counters = "default";  // --counters: hardware/kernel events (hw_counters.hpp)
  bool require_counters = false;     // refuse to run if a selected counter is unavailable
  unsigned schedtrace_ms = 0;        // --schedtrace=MS (0: off)
  std::string trace_path;            // --trace=FILE.json (empty: off)
  std::size_t trace_max_events = 1000000;
};

struct Case {
  const SchedulerEntry* scheduler = nullptr;
  ParamValues scheduler_params;
  const WorkloadEntry* workload = nullptr;
  ParamValues workload_params;
  unsigned threads = 1;

  std::string label() const;  // "steal-half fib-go(n=27 cutoff=0) threads=2"
};

// Expands and validates a request. Throws ParamError (one line: the problem and the fix).
std::vector<Case> plan(const RunRequest& request);

struct CaseResult {
  Case c;
  std::vector<double> wall_ns;  // one per repetition
  double tasks = 0;             // tasks per run (root included)
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

// The CSV header: identification, every parameter, wall time, tasks and CPU time, every
// scheduler counter, getrusage context switches, the hardware/kernel event columns.
std::vector<std::string> csv_columns();

// Runs every case, appending rows to `csv` (created by the caller, so that an unwritable path
// is refused before anything runs) and keeping its metadata sidecar current.
// `hw` counts the selected hardware/kernel events on the worker threads of each run.
RunOutcome execute(const RunRequest& request, const std::vector<Case>& cases, CsvWriter& csv, HwCounters& hw);

// The short table printed after a run: median time, ns per task, ratios to serial and tbb.
std::string summary_table(const std::vector<CaseResult>& results);

}  // namespace schedlab
