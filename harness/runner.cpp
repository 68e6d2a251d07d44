#include "runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <new>
#include <random>
#include <utility>

#include "chrome_trace.hpp"
#include "counters/hw_counters.hpp"
#include "csv.hpp"
#include "go_reference.hpp"
#include "measure.hpp"
#include "row.hpp"
#include "schedtrace.hpp"
#include "sidecar.hpp"
#include "sim_subject.hpp"

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

// The most worker threads the live schedulers of a block may hold together (a case that needs
// more is built alone). A few times the cores of the machines this runs on: a typical block
// (a handful of schedulers at 1-8 threads) stays live for the whole run, while a long --threads
// sweep, or several schedulers at 150 threads under a thread limit, holds a bounded set.
constexpr unsigned kLiveThreadBudget = 256;

// Everything a block needs from the run around it.
struct RunState {
  const RunRequest& request;
  RunOutputs& out;
  HwCounters& events;
  ProgressLine& progress;
  SchedTracer& schedtrace;
  std::size_t done = 0;  // repetitions measured so far
  unsigned block = 0;    // the block being measured
  std::uint64_t clock = 0;  // counts uses of subjects, for least-recently-used eviction
  std::vector<CaseResult> results;
  std::mt19937_64 order;  // shuffles each repetition's cases (seeded by request.order_seed)
};

// A case of the block being measured. Its subject is built when first needed and may be
// destroyed and built again (see run_block).
struct LiveCase {
  const Case* c;
  WorkloadFacts facts;  // asked once per case: every repetition's is the same
  std::unique_ptr<Subject> subject;
  CaseResult result;
  std::uint64_t last_used = 0;
};

// Worker threads a case's subject keeps alive (the go-runtime program's are another process's).
unsigned live_threads(const Case& c) { return c.scheduler->external() ? 0 : c.threads; }

// Builds the case's subject. A scheduler that cannot get its threads or its memory is named in
// the error.
std::unique_ptr<Subject> make_subject(const Case& c, RunState& run) {
  if (c.scheduler->external()) return std::make_unique<GoProgramSubject>(c, run.request.warmup, run.request.schedtrace_ms);
  if (c.simulated) return std::make_unique<SimSubject>(c, SimSettings{*run.out.geometry(), run.request.warmup});
  Watchers watchers{&run.events, &run.schedtrace, run.out.trace(), std::nullopt};
  if (c.modelled) watchers.model = run.out.geometry()->ll;
  try {
    return in_process_subject(*c.scheduler, c.threads, c.scheduler_params, c.label(), watchers);
  } catch (const ResourceError& e) {
    throw ResourceError(c.label() + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw ResourceError(c.label() + ": out of memory building the scheduler; use fewer --threads");
  }
}

// The subject of `l`, built and warmed up now if it is not live. Invariant: the live subjects of
// the block hold at most max(kLiveThreadBudget, l's threads) worker threads; the least recently
// used are destroyed to make room (they are rebuilt, and warmed up again, when next needed).
Subject& live_subject(LiveCase& l, std::vector<LiveCase>& block, Workload& workload, RunState& run) {
  run.out.sidecar().arm_last_words(l.c->label());
  if (!l.subject) {
    unsigned live = 0;
    for (const LiveCase& other : block) live += other.subject ? live_threads(*other.c) : 0;
    const unsigned budget = std::max(kLiveThreadBudget, live_threads(*l.c));
    while (live + live_threads(*l.c) > budget) {
      LiveCase* oldest = nullptr;
      for (LiveCase& other : block) {
        if (other.subject && (oldest == nullptr || other.last_used < oldest->last_used)) oldest = &other;
      }
      live -= live_threads(*oldest->c);
      oldest->subject.reset();
    }
    l.subject = make_subject(*l.c, run);
    l.subject->warm_up(workload, run.request.warmup);
  }
  l.last_used = ++run.clock;
  return *l.subject;
}

// One repetition of a block: every case once, in the order given. Rows are written when the
// repetition ends (or stops early), because the machine's load they carry is the whole
// repetition's: the unit the claims compare within.
class BlockRepetition {
 public:
  BlockRepetition(RunState& run, unsigned rep) : run_(run), rep_(rep), before_(sample_machine()) {}
  // When a case failed or a stop came, the cases measured before it keep their rows; an error
  // writing them is dropped here, the one already propagating says what went wrong first.
  ~BlockRepetition() {
    try {
      write();
    } catch (const std::exception&) {
    }
  }

  void measure(LiveCase& l, std::vector<LiveCase>& block, Workload& workload) {
    const Case& c = *l.c;
    run_.progress.update(run_.done, c.label() + " rep " + std::to_string(rep_ + 1) + "/" +
                                        std::to_string(run_.request.reps));
    Subject& subject = live_subject(l, block, workload, run_);
    measured_.emplace_back(&l, subject.measure(workload, /*traced=*/rep_ == 0));
    ++run_.done;
  }

  // Writes the rows of the cases measured so far. Throws std::runtime_error if the CSV cannot be
  // written.
  // Each row leaves the list once written, so that a retry after a failed write (the destructor's)
  // writes none twice.
  void write() {
    if (measured_.empty()) return;
    const MachineLoad load = machine_load(before_, sample_machine());
    set_reference_times();
    while (!measured_.empty()) {
      auto& [l, m] = measured_.front();
      m.machine = load;
      m.facts = l->facts;
      run_.out.csv().write_row(
          row_cells(RowContext{run_.out.sidecar().run_id(), run_.request.preset, *l->c, run_.block, rep_, m}));
      l->result.wall_ns.push_back(m.wall_ns);
      l->result.reps.push_back(rep_);
      l->result.tasks = m.tasks ? static_cast<double>(*m.tasks) : NAN;
      measured_.erase(measured_.begin());
    }
  }

 private:
  // The times each row is compared with in this repetition (Measurement::elision_ns,
  // one_thread_ns): the elision's, and the same variant's at 1 thread. A variant is a scheduler
  // with its parameters; simulated rows take part in neither.
  void set_reference_times() {
    std::optional<double> elision;
    for (const auto& [l, m] : measured_) {
      if (l->c->scheduler->elision() && !l->c->simulated) elision = m.wall_ns;
    }
    for (auto& [l, m] : measured_) {
      if (l->c->simulated) continue;
      m.elision_ns = elision;
      for (const auto& [other, om] : measured_) {
        if (other->c->threads == 1 && !other->c->simulated && other->c->scheduler == l->c->scheduler &&
            other->c->scheduler_params == l->c->scheduler_params) {
          m.one_thread_ns = om.wall_ns;
        }
      }
    }
  }

  RunState& run_;
  const unsigned rep_;
  const MachineSample before_;
  std::vector<std::pair<LiveCase*, Measurement>> measured_;
};

// Builds (and warms up) every subject of the block that is not live, when the whole block fits
// the thread budget: outside the repetition's machine sample, as before the first repetition.
// A block larger than the budget builds inside its repetitions (its machine load then spans
// those builds; their CPU time is this process's, not counted as other processes').
void build_if_all_fit(const std::vector<LiveCase*>& order, std::vector<LiveCase>& block, Workload& workload,
                      RunState& run) {
  unsigned need = 0;
  for (const LiveCase& l : block) need += live_threads(*l.c);
  if (need > kLiveThreadBudget) return;
  for (LiveCase* l : order) {
    if (!l->subject) (void)live_subject(*l, block, workload, run);
  }
}

// The cases [first, last) share a workload and its parameters. Repetition i of every case runs
// before repetition i+1 of any, in an order shuffled anew for each repetition: each repetition
// is a block in which every variant saw the same phase of a noisy machine, and no variant
// always runs first or last (after another's warm caches, or in a slot the machine happens to
// slow down). A block spans thread counts on purpose: the claims compare a variant's growth
// from 1 to N threads within one block (claims.py, "growth").
//
// The live schedulers are bounded by a thread budget (live_subject): a block that fits is built
// and warmed up before its first repetition, as a whole; a larger one builds a case's scheduler
// right before it is needed and destroys the least recently used. So start-up costs at most a
// budget's worth of builds however long the sweep, and a sweep of hundreds of thread counts
// holds a few hundred threads, not hundreds of schedulers. Returns false when a stop was
// requested.
bool run_block(const Case* first, const Case* last, RunState& run) {
  std::vector<LiveCase> block;
  std::unique_ptr<Workload> workload;
  struct Finally {  // whatever happens, the schedulers go first, then the workload's files; the results are kept
    std::vector<LiveCase>& block;
    std::unique_ptr<Workload>& workload;
    RunState& run;
    ~Finally() {
      for (LiveCase& l : block) l.subject.reset();
      if (workload) workload->cleanup();
      for (LiveCase& l : block) run.results.push_back(std::move(l.result));
    }
  } finally{block, workload, run};

  workload = first->workload->make(first->workload_params);
  workload->prepare();
  for (const Case* c = first; c != last; ++c) {
    const WorkloadFacts facts{workload->work_span_ratio(), workload->round_robin_ratio(c->threads)};
    block.push_back(LiveCase{c, facts, nullptr, CaseResult{*c, run.block, {}, {}, NAN}});
  }
  std::vector<LiveCase*> order;
  for (LiveCase& l : block) order.push_back(&l);
  for (unsigned rep = 0; rep < run.request.reps; ++rep) {
    std::shuffle(order.begin(), order.end(), run.order);
    build_if_all_fit(order, block, *workload, run);
    BlockRepetition repetition(run, rep);
    for (LiveCase* l : order) {
      if (g_stop_requested.load()) return false;
      repetition.measure(*l, block, *workload);
    }
    repetition.write();
  }
  return true;
}

// Every block in order. Throws what a failed run threw.
RunStatus run_blocks(const std::vector<Case>& cases, RunState& run) {
  for (std::size_t first = 0; first < cases.size();) {
    std::size_t last = first;
    // A block is one workload configuration; simulated cases form blocks of their own (their
    // wall time is Valgrind's, never compared with a native run's).
    while (last < cases.size() && cases[last].workload == cases[first].workload &&
           cases[last].workload_params == cases[first].workload_params &&
           cases[last].simulated == cases[first].simulated) {
      ++last;
    }
    if (!run_block(cases.data() + first, cases.data() + last, run)) return RunStatus::interrupted;
    ++run.block;
    first = last;
  }
  if (ChromeTrace* timeline = run.out.trace()) {
    timeline->write();
    std::fprintf(stderr, "schedlab: trace written to %s%s\n", run.request.trace_path.c_str(),
                 timeline->dropped() == 0 ? ""
                                          : (" (cap reached: " + std::to_string(timeline->dropped()) +
                                             " events dropped; raise --trace-max-events or trace fewer cases)").c_str());
  }
  return RunStatus::complete;
}

const char* status_word(RunStatus s) {
  return s == RunStatus::complete ? "complete" : s == RunStatus::failed ? "failed" : "interrupted";
}

}  // namespace

RunOutputs::RunOutputs(const RunRequest& r, const std::vector<Case>& cases, const HwCounters& events)
    : geometry_(cache_geometry_for(r, cases)) {  // plan() has checked it
  try {
    if (!r.trace_path.empty()) trace_ = std::make_unique<ChromeTrace>(r.trace_path, r.trace_max_events);
    csv_ = std::make_unique<CsvWriter>(r.out_path, header());
    try {
      sidecar_ = std::make_unique<Sidecar>(r, events, cases, geometry_, csv_->row_counter());
    } catch (...) {
      ::unlink(r.out_path.c_str());  // created just now, holds only the header
      throw;
    }
  } catch (const std::runtime_error& e) {
    throw ParamError(e.what());  // refused before anything ran (the trace removes itself)
  }
}

RunOutputs::~RunOutputs() = default;

RunOutcome execute(const RunRequest& r, const std::vector<Case>& cases, RunOutputs& out, HwCounters& events) {
  ProgressLine progress(r.progress, cases.size() * r.reps);
  SchedTracer schedtrace(r.schedtrace_ms);
  RunState run{r, out, events, progress, schedtrace, 0, 0, 0, {}, std::mt19937_64(r.order_seed)};

  RunOutcome outcome;
  try {
    outcome.status = run_blocks(cases, run);
  } catch (const std::exception& e) {
    outcome.status = RunStatus::failed;
    outcome.error = e.what();
  }
  outcome.results = std::move(run.results);
  outcome.rows = out.csv().rows();
  outcome.sidecar_error = out.sidecar().finish(status_word(outcome.status), outcome.error, outcome.rows, events);
  if (!outcome.sidecar_error.empty() && outcome.status == RunStatus::complete) {
    outcome.status = RunStatus::failed;  // the rows are whole, but nothing on disk says the run completed
    outcome.error = std::exchange(outcome.sidecar_error, "");
  }
  return outcome;
}

}  // namespace schedlab
