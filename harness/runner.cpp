#include "runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "chrome_trace.hpp"
#include "counters/hw_counters.hpp"
#include "csv.hpp"
#include "diagnostics.hpp"
#include "go_reference.hpp"
#include "measure.hpp"
#include "metadata.hpp"
#include "row.hpp"
#include "schedtrace.hpp"

namespace schedlab {

std::atomic<bool> g_stop_requested{false};

namespace {

class ProgressLine {
 public:
  ProgressLine(bool enabled, std::size_t total) : enabled_(enabled), total_(total) {}
  void update(std::size_t done, const std::string& what) {
    if (!enabled_) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    char eta[32] = "?";
    if (done > 0) std::snprintf(eta, sizeof eta, "%.0fs", elapsed / static_cast<double>(done) * static_cast<double>(total_ - done));
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s  elapsed %.0fs  eta %s", done + 1, total_,
                 what.c_str(), elapsed, eta);
    std::fflush(stderr);
  }
  ~ProgressLine() {
    if (enabled_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool enabled_;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Every scheduler's and workload's parameters with their defaults, canonical: what a variant's
// parameters are compared with (scripts/schedlab_results names a variant by what it changed).
nlohmann::json parameter_defaults() {
  auto defaults = [](const std::vector<ParamSpec>& specs) {
    nlohmann::json out = nlohmann::json::object();
    for (const ParamSpec& p : specs) out[p.name] = p.canonical(p.default_value);
    return out;
  };
  nlohmann::json out = {{"schedulers", nlohmann::json::object()}, {"workloads", nlohmann::json::object()}};
  for (const SchedulerEntry& s : scheduler_registry()) out["schedulers"][s.name] = defaults(s.params);
  for (const WorkloadEntry& w : workload_registry()) out["workloads"][w.name] = defaults(w.params);
  return out;
}

// The run's sidecar: written "running" at start, kept current, finished once.
class Sidecar {
 public:
  Sidecar(const RunRequest& r, const HwCounters& events) : file_(metadata_path_for(r.out_path)) {
    run_id_ = compact_timestamp() + "-" + host_name() + "-" + std::to_string(::getpid());
    nlohmann::json& d = file_.data();
    d["run_id"] = run_id_;
    d["csv"] = r.out_path;
    d["preset"] = r.preset;
    d["command_line"] = r.command_line;
    d["started_utc"] = utc_timestamp();
    d["machine"] = machine_info();
    d["reps"] = r.reps;
    d["order_seed"] = r.order_seed;
    d["warmup_runs"] = r.warmup;
    d["counters"] = counter_metadata(events);
    d["status"] = "running";
    d["notes"] = nlohmann::json::array(
        {"peak_live_tasks is exact with one worker thread and exact to within 32 tasks per additional "
         "worker (batched gauge)",
         "wall_ns covers Scheduler::run of the workload's root task; warm-up runs are not recorded",
         "cpu_ns, ru_nvcsw and ru_nivcsw are getrusage(RUSAGE_SELF) differences: the whole process",
         "go-runtime rows: wall_ns and tasks as reported by the Go program for its measured region; "
         "other columns are not measured for them"});
    d["schema"] = schema_json();
    d["parameters"] = parameter_defaults();
    d["peers"] = peer_names();  // the report's peers figure reads which schedulers are peers
    file_.save();
  }

  const std::string& run_id() const { return run_id_; }

  // A task's stack overflow ends the process from the signal handler: it leaves this sidecar,
  // marked failed, not one that says "running". Armed before each repetition of `label`.
  void arm_crash_report(const std::string& label, std::size_t rows) {
    set_overflow_context(label.c_str());
    nlohmann::json crashed = file_.data();
    crashed["status"] = "failed";
    crashed["error"] = "stack overflow in a task of " + label + " (the process exited); rerun with a larger --stack-size";
    crashed["rows"] = rows;
    set_overflow_report(file_.path(), crashed.dump(2) + "\n");
  }

  void finish(RunStatus status, const std::string& error, std::size_t rows, const HwCounters& events) {
    set_overflow_report("", "");
    nlohmann::json& d = file_.data();
    d["status"] = status == RunStatus::complete ? "complete" : status == RunStatus::failed ? "failed" : "interrupted";
    if (!error.empty()) d["error"] = error;
    d["rows"] = rows;
    d["counters"] = counter_metadata(events);
    d["finished_utc"] = utc_timestamp();
    file_.save();
  }

 private:
  MetadataFile file_;
  std::string run_id_;
};

// Everything a block needs from the run around it.
struct RunState {
  const RunRequest& request;
  CsvWriter& csv;
  HwCounters& events;
  Sidecar& sidecar;
  ProgressLine& progress;
  SchedTracer& schedtrace;
  ChromeTrace* timeline;
  std::size_t done = 0;  // repetitions measured so far
  unsigned block = 0;    // the block being measured
  std::vector<CaseResult> results;
  std::mt19937_64 order;  // shuffles each repetition's cases (seeded by request.order_seed)
};

std::unique_ptr<Subject> make_subject(const Case& c, RunState& run) {
  if (c.scheduler->external) return std::make_unique<GoProgramSubject>(c, run.request.warmup, run.request.schedtrace_ms);
  return std::make_unique<InProcessSubject>(c.scheduler->make(c.threads, c.scheduler_params), c.label(),
                                            c.scheduler->name, Watchers{&run.events, &run.schedtrace, run.timeline});
}

struct LiveCase {
  const Case* c;
  std::unique_ptr<Subject> subject;
  CaseResult result;
};

// One repetition of one case, written as one row.
void measure_one(LiveCase& l, Workload& workload, unsigned rep, RunState& run) {
  const Case& c = *l.c;
  run.progress.update(run.done, c.label() + " rep " + std::to_string(rep + 1) + "/" + std::to_string(run.request.reps));
  run.sidecar.arm_crash_report(c.label(), run.csv.rows());
  const Measurement m = l.subject->measure(workload, /*traced=*/rep == 0);
  run.csv.write_row(row_cells(RowContext{run.sidecar.run_id(), run.request.preset, c, run.block, rep, m}));
  l.result.wall_ns.push_back(m.wall_ns);
  l.result.tasks = m.tasks ? static_cast<double>(*m.tasks) : NAN;
  ++run.done;
}

// The cases [first, last) share a workload and its parameters. Every case is built and warmed
// up first; then repetition i of every case runs before repetition i+1 of any, in an order
// shuffled anew for each repetition: each repetition is a block in which every variant saw the
// same phase of a noisy machine, and no variant always runs first or last (after another's
// warm caches, or in a slot the machine happens to slow down). Returns false when a stop was
// requested.
bool run_block(const Case* first, const Case* last, RunState& run) {
  std::vector<LiveCase> block;
  std::unique_ptr<Workload> workload;
  struct Finally {  // whatever happens, the workload's files go and the results are kept
    std::vector<LiveCase>& block;
    std::unique_ptr<Workload>& workload;
    RunState& run;
    ~Finally() {
      if (workload) workload->cleanup();
      for (LiveCase& l : block) run.results.push_back(std::move(l.result));
    }
  } finally{block, workload, run};

  workload = first->workload->make(first->workload_params);
  workload->prepare();
  for (const Case* c = first; c != last; ++c) {
    block.push_back(LiveCase{c, make_subject(*c, run), CaseResult{*c, {}, NAN}});
    block.back().subject->warm_up(*workload, run.request.warmup);
  }
  std::vector<LiveCase*> order;
  for (LiveCase& l : block) order.push_back(&l);
  for (unsigned rep = 0; rep < run.request.reps; ++rep) {
    std::shuffle(order.begin(), order.end(), run.order);
    for (LiveCase* l : order) {
      if (g_stop_requested.load()) return false;
      measure_one(*l, *workload, rep, run);
    }
  }
  return true;
}

}  // namespace

RunOutcome execute(const RunRequest& r, const std::vector<Case>& cases, CsvWriter& csv, HwCounters& events) {
  Sidecar sidecar(r, events);
  ProgressLine progress(r.progress, cases.size() * r.reps);
  SchedTracer schedtrace(r.schedtrace_ms);
  std::unique_ptr<ChromeTrace> timeline;
  if (!r.trace_path.empty()) timeline = std::make_unique<ChromeTrace>(r.trace_path, r.trace_max_events);
  RunState run{r, csv, events, sidecar, progress, schedtrace, timeline.get(), 0, 0, {}, std::mt19937_64(r.order_seed)};

  RunOutcome outcome;
  try {
    for (std::size_t first = 0; first < cases.size();) {
      std::size_t last = first;
      while (last < cases.size() && cases[last].workload == cases[first].workload &&
             cases[last].workload_params == cases[first].workload_params) {
        ++last;
      }
      if (!run_block(cases.data() + first, cases.data() + last, run)) {
        outcome.status = RunStatus::interrupted;
        break;
      }
      ++run.block;
      first = last;
    }
    if (timeline && outcome.status == RunStatus::complete) {
      timeline->write();
      std::fprintf(stderr, "schedlab: trace written to %s%s\n", r.trace_path.c_str(),
                   timeline->dropped() == 0 ? ""
                                            : (" (cap reached: " + std::to_string(timeline->dropped()) +
                                               " events dropped; raise --trace-max-events or trace fewer cases)").c_str());
    }
  } catch (const std::exception& e) {
    outcome.status = RunStatus::failed;
    outcome.error = e.what();
  }
  outcome.results = std::move(run.results);
  outcome.rows = csv.rows();
  sidecar.finish(outcome.status, outcome.error, outcome.rows, events);
  return outcome;
}

}  // namespace schedlab
