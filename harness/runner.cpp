#include "runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "chrome_trace.hpp"
#include "counters/hw_counters.hpp"
#include "csv.hpp"
#include "go_reference.hpp"
#include "machine_load.hpp"
#include "machine_timeline.hpp"
#include "latency_file.hpp"
#include "measure.hpp"
#include "memory_budget.hpp"
#include "metadata.hpp"
#include "row.hpp"
#include "schedtrace.hpp"
#include "served_subject.hpp"
#include "sidecar.hpp"
#include "sim_subject.hpp"
#include "speed_probe.hpp"

namespace schedlab {

std::atomic<bool> g_stop_requested{false};
std::atomic<bool> g_stopping_now{false};

namespace {

// The sidecar's word on an A/B run.
constexpr char kAbRule[] =
    "every case measured by three servers, long-lived children set up alike: A this binary, A2 this binary again "
    "(the A/A control), B the --against binary; the three in one block, in a shuffled order, each repetition; "
    "B / A paired per block is the build's effect, A2 / A the run's noise floor (scripts/compare RUN.csv)";

// The sidecar's word on the order of the measurements.
constexpr char kInterleaving[] =
    "repetition i of every configuration of a part (one entry of a preset's runs, or the command line's "
    "selection) before repetition i+1 of any; the configurations, and the cases within each, in an order "
    "shuffled anew for each repetition (--order-seed); a block is one configuration's cases back to back in "
    "one repetition. `split` lists the parts whose configurations the thread or memory budget split into "
    "groups run one after another (by block_index)";

// The sidecar's word on replacement repetitions.
constexpr char kReplacementRule[] =
    "a row flagged slow_cpu or noisy is left out of the claims; after the run's repetitions of a group of "
    "configurations, each block with such rows is measured again, one extra repetition per flagged block "
    "repetition (those flagged in turn included), at most max_per_block extra per block, in rounds interleaved "
    "and shuffled like the others (rep = reps, reps + 1, ...), within a time budget: the replacements and the "
    "waits before them take at most budget_share of the time the group's planned repetitions took. Before each "
    "round the runner waits, up to max_wait_s and half of what is left of the budget, until other processes use "
    "under the "
    "`noisy` share of each CPU over 0.1 s and the CPUs' speed holds still over it. `blocks` gives the extra "
    "repetitions per block_index; `waits` the rounds, the seconds waited and the rounds that ran after the "
    "longest wait with the machine still unsteady; `groups` each group's planned seconds, its budget and what "
    "it used; `unreplaced` the flagged block repetitions per block_index that the budget (or max_per_block) left "
    "unreplaced: the claims leave them out, and the report names them";

// The replacements and waits of a group take at most this share of the time its planned
// repetitions took. A quarter: a preset then finishes within 1.25 times its planned phase
// whatever the machine does (on a fresh cloud VM whose second vCPU stayed 1.5x slower for ten
// minutes, an unbounded rule ran 4,550 replacement repetitions and the quick preset took 25
// minutes instead of 6), and a quiet run's few replacements (6-77 in the quick preset's 5,825
// repetitions) fit many times over.
constexpr double kReplacementBudgetShare = 0.25;

// Before a round of replacements, the runner waits at most this long for a steady machine. The
// phases that flag repetitions last seconds (a co-tenant's bursts of 2-5 s in scripts/cotenant,
// the VM's slow phases of about 2 s), while a short configuration runs its 25 repetitions and its
// replacements in under half a second: without the wait, the replacements of a part that a phase
// covered fall inside the same phase and are flagged in turn. 5 s outlasts most such phases and
// keeps a machine that stays busy from stretching a run by more than 5 s per round.
constexpr std::chrono::milliseconds kSteadyWaitMax{5000};
// The window over which other processes' CPU time is read while waiting: 10 of /proc/stat's
// 10 ms ticks per CPU, enough to see a busy co-tenant (kNoisyMinTicks) and short enough to stop
// waiting soon after it leaves.
constexpr std::chrono::milliseconds kSteadyWindow{100};

class ProgressLine {
 public:
  ProgressLine(bool enabled, std::size_t total) : enabled_(enabled), total_(total) {}
  void update(std::size_t done, const std::string& what) {
    if (!enabled_) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    char eta[32] = "?";
    if (done >= total_) {
      std::snprintf(eta, sizeof eta, "replacing flagged repetitions");
    } else if (done > 0) {
      std::snprintf(eta, sizeof eta, "%.0fs", elapsed / static_cast<double>(done) * static_cast<double>(total_ - done));
    }
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

// The most worker threads the live schedulers of a group may hold together (a case that needs
// more is built alone). A few times the cores of the machines this runs on: a typical part (a
// handful of schedulers at 1-8 threads over a few configurations) stays live for the whole run,
// while a long --threads sweep, or several schedulers at 150 threads under a thread limit, holds
// a bounded set.
constexpr unsigned kLiveThreadBudget = 256;
// The share of the memory budget (memory_budget.hpp) the prepared inputs of the configurations
// interleaved together may hold (locality's arrays, matmul's matrices): half, so that the runs'
// own live tasks keep the other half.
constexpr double kInputShare = 0.5;

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

// Worker threads a case's subject keeps alive (the go-runtime program's are another process's).
unsigned live_threads(const Case& c) { return c.scheduler->external() ? 0 : c.threads; }

unsigned live_threads(const Case* first, const Case* last) {
  unsigned n = 0;
  for (const Case* c = first; c != last; ++c) n += live_threads(*c);
  return n;
}

// This process's resident memory (/proc/self/statm), 0 when it cannot be read.
std::uint64_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// Builds the case's subject. A scheduler that cannot get its threads or its memory is named in
// the error.
std::unique_ptr<Subject> make_subject(const Case& c, RunState& run) {
  if (!c.build.empty()) return std::make_unique<ServedSubject>(*run.servers.at(c.build), c);
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

// Configurations measured interleaved: repetition i of every block before repetition i+1 of
// any, the blocks and the cases within each block in an order shuffled anew for each
// repetition. A slow phase of the machine (a few seconds) then falls on a few repetitions of
// every configuration of the part, not on most repetitions of one, whose verdict it would
// decide. A block stays one configuration's cases back to back in one repetition, so every
// paired comparison (and the claims' "growth" from 1 to N threads) is within a block as before.
//
// The group owns its blocks: its destructor destroys the subjects, then cleans up the workloads
// (their files), and keeps the results, whatever happened.
class Group {
 public:
  explicit Group(RunState& run) : run_(run) {}
  ~Group() {
    for (Block& b : blocks_)
      for (LiveCase& l : b.cases) l.subject.reset();
    for (Block& b : blocks_) cleanup(b);
    for (Block& b : blocks_)
      for (LiveCase& l : b.cases) run_.results.push_back(std::move(l.result));
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  bool empty() const { return blocks_.empty(); }
  std::size_t size() const { return blocks_.size(); }
  std::uint64_t input_bytes() const {
    std::uint64_t n = 0;
    for (const Block& b : blocks_) n += b.input_bytes;
    return n;
  }

  // Prepares the configuration [first, last) (cases sharing a workload and its parameters) as
  // block `index`, measuring the memory its inputs take.
  void add(const Case* first, const Case* last, unsigned index) {
    Block& b = blocks_.emplace_back();
    b.index = index;
    run_.probe.invalidate();
    b.workload = first->workload->make(first->workload_params);
    // An A/B run's cases run in their builds' servers, which prepare their own copies.
    if (std::any_of(first, last, [](const Case& c) { return c.build.empty(); })) {
      const std::uint64_t before = resident_bytes();
      b.prepared = true;
      b.workload->prepare();
      const std::uint64_t after = resident_bytes();
      b.input_bytes = after > before ? after - before : 0;
    }
    for (const Case* c = first; c != last; ++c) {
      const WorkloadFacts facts{b.workload->work_span_ratio(), b.workload->round_robin_ratio(c->threads)};
      b.cases.push_back(LiveCase{c, b.workload.get(), facts, nullptr, CaseResult{*c, index, {}, {}, NAN}});
    }
  }
  // Takes back the block add() made last, before anything ran in it: it goes to the next group.
  void drop_last() {
    cleanup(blocks_.back());
    blocks_.pop_back();
  }
  std::vector<unsigned> indices() const {
    std::vector<unsigned> out;
    for (const Block& b : blocks_) out.push_back(b.index);
    return out;
  }

  // Every repetition of every block. Returns false when a stop was requested. Throws what a
  // failed run threw.
  bool run() {
    std::vector<Block*> blocks;
    std::vector<std::vector<LiveCase*>> orders;  // per block, its cases in the repetition's order
    for (Block& b : blocks_) blocks.push_back(&b);
    for (Block& b : blocks_) {
      orders.emplace_back();
      for (LiveCase& l : b.cases) orders.back().push_back(&l);
    }
    std::vector<std::size_t> order(blocks.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto planned_start = std::chrono::steady_clock::now();
    for (unsigned rep = 0; rep < run_.request.reps; ++rep) {
      std::shuffle(order.begin(), order.end(), run_.order);
      for (std::size_t i : order) {
        std::shuffle(orders[i].begin(), orders[i].end(), run_.order);
        build_if_all_fit();
        if (!repetition(*blocks[i], orders[i], rep)) return false;
      }
    }
    // Replacements (kReplacementRule): a slow phase of the machine costs the blocks it fell on
    // repetitions, which the claims leave out, so their intervals widen and a verdict can turn
    // inconclusive where a quiet run's held. Each flagged repetition earns its block one more,
    // in rounds over the blocks still short, until none is, each has had its maximum, or the
    // group's budget is spent (a machine that stays disturbed would flag the replacements too).
    const auto since = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    const double planned_s = since(planned_start);
    const double budget_s = kReplacementBudgetShare * planned_s;
    const auto replacing_start = std::chrono::steady_clock::now();
    bool budget_spent = false;
    for (unsigned extra = 0; extra < run_.request.replace_flagged && !budget_spent; ++extra) {
      std::vector<std::size_t> short_blocks;
      for (std::size_t i = 0; i < blocks.size(); ++i) {
        if (blocks[i]->flagged > blocks[i]->replaced) short_blocks.push_back(i);
      }
      if (short_blocks.empty()) break;
      // Half of what is left at most: waiting must not eat the budget the replacements need.
      if (!wait_until_steady((budget_s - since(replacing_start)) / 2)) return false;
      std::shuffle(short_blocks.begin(), short_blocks.end(), run_.order);
      for (std::size_t i : short_blocks) {
        // The next repetition of this block is expected to last as long as its last one.
        if (since(replacing_start) + blocks[i]->last_repetition_s > budget_s) {
          budget_spent = true;
          break;
        }
        std::shuffle(orders[i].begin(), orders[i].end(), run_.order);
        build_if_all_fit();
        if (!repetition(*blocks[i], orders[i], run_.request.reps + extra)) return false;
        ++blocks[i]->replaced;
        run_.replaced[std::to_string(blocks[i]->index)] = blocks[i]->replaced;
      }
    }
    nlohmann::json left = nlohmann::json::object();
    for (const Block* b : blocks) {
      if (b->flagged > b->replaced) left[std::to_string(b->index)] = b->flagged - b->replaced;
    }
    run_.unreplaced.update(left);
    run_.budgets.push_back({{"blocks", indices()},
                            {"planned_s", planned_s},
                            {"budget_s", budget_s},
                            {"used_s", since(replacing_start)},
                            {"spent", budget_spent}});
    return true;
  }

 private:
  void cleanup(Block& b) {
    if (b.workload && b.prepared) b.workload->cleanup();
  }

  bool repetition(Block& b, const std::vector<LiveCase*>& order, unsigned rep);

  // Waits (kSteadyWaitMax at most, and at most `budget_s`, about) until other processes leave every CPU
  // and the CPUs' speed holds still; false when the run was interrupted meanwhile. Executed only
  // by the runner's thread, between repetitions (the probe pins it).
  bool wait_until_steady(double budget_s) {
    const auto start = std::chrono::steady_clock::now();
    const auto limit = std::min<std::chrono::duration<double>>(kSteadyWaitMax, std::chrono::duration<double>(budget_s));
    bool steady = false;
    while (!steady && std::chrono::steady_clock::now() - start < limit) {
      if (g_stop_requested.load()) return false;
      BlockLoad window;
      const bool speed_held = run_.probe.steady_over([] { std::this_thread::sleep_for(kSteadyWindow); });
      window.finish();
      steady = speed_held;
      for (unsigned cpu = 0; cpu < run_.usable && steady; ++cpu) steady = !window.on({cpu}).noisy.value_or(false);
    }
    ++run_.steady_waits;
    if (!steady) ++run_.steady_timeouts;
    run_.steady_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return true;
  }

  // The subject of `l`, built and warmed up now if it is not live. Invariant: the live subjects
  // of the group hold at most max(kLiveThreadBudget, l's threads) worker threads; the least
  // recently used are destroyed to make room (they are rebuilt, and warmed up again, when next
  // needed).
  Subject& live_subject(LiveCase& l) {
    run_.out.sidecar().arm_last_words(l.c->label());
    if (!l.subject) {
      unsigned live = 0;
      for (Block& b : blocks_)
        for (const LiveCase& other : b.cases) live += other.subject ? live_threads(*other.c) : 0;
      const unsigned budget = std::max(kLiveThreadBudget, live_threads(*l.c));
      while (live + live_threads(*l.c) > budget) {
        LiveCase* oldest = nullptr;
        for (Block& b : blocks_)
          for (LiveCase& other : b.cases)
            if (other.subject && (oldest == nullptr || other.last_used < oldest->last_used)) oldest = &other;
        live -= live_threads(*oldest->c);
        oldest->subject.reset();
      }
      run_.probe.invalidate();
      l.subject = make_subject(*l.c, run_);
      l.subject->warm_up(*l.workload, run_.request.warmup);
    }
    l.last_used = ++run_.clock;
    return *l.subject;
  }

  // Builds (and warms up) every subject of the group that is not live, when the whole group fits
  // the thread budget: outside any repetition's machine sample, as before the first repetition.
  // A group larger than the budget (one configuration alone: a long --threads sweep) builds
  // inside its repetitions (their machine load then spans those builds; their CPU time is this
  // process's, not counted as other processes').
  void build_if_all_fit() {
    unsigned need = 0;
    for (const Block& b : blocks_)
      for (const LiveCase& l : b.cases) need += live_threads(*l.c);
    if (need > kLiveThreadBudget) return;
    for (Block& b : blocks_)
      for (LiveCase& l : b.cases)
        if (!l.subject) (void)live_subject(l);
  }

  RunState& run_;
  std::deque<Block> blocks_;  // a deque: LiveCase addresses stay put as blocks are added
};

// One repetition of a block: every case once, in the order given, between two probes of the
// CPUs' speed. Rows are written when the repetition ends (or stops early), because the machine's
// load and speed they carry are the whole repetition's, each on the CPUs its own case ran on
// (machine_load.hpp, speed_probe.hpp): the unit the claims compare within.
class BlockRepetition {
 public:
  BlockRepetition(RunState& run, const Block& block, unsigned rep)
      : run_(run), block_(block), rep_(rep), probe_before_(run.probe.start()) {}
  // When a case failed or a stop came, the cases measured before it keep their rows; an error
  // writing them is dropped here, the one already propagating says what went wrong first.
  ~BlockRepetition() {
    try {
      write();
    } catch (const std::exception&) {
    }
  }

  // Whether a row of the repetition was flagged slow_cpu or noisy (the claims leave such rows
  // out, and the block earns a replacement); after write().
  bool flagged() const { return flagged_ > 0; }

  void measure(LiveCase& l, Subject& subject) {
    load_.case_begin();
    Measurement m = subject.measure(*l.workload, /*traced=*/rep_ == 0);
    load_.case_end(case_cpus(*l.c, run_.usable));
    measured_.emplace_back(&l, std::move(m));
    ++run_.done;
  }

  // Writes the rows of the cases measured so far. Throws std::runtime_error if the CSV cannot be
  // written.
  // Each row leaves the list once written, so that a retry after a failed write (the destructor's)
  // writes none twice.
  void write() {
    if (measured_.empty()) return;
    if (!probe_after_) {
      load_.finish();
      const std::size_t probes_before_end = run_.probe.points().size();  // the usual change: before this block's end
      probe_after_ = run_.probe.end();
      unsigned noisy = 0, slow = 0;
      for (auto& [l, m] : measured_) {
        const std::vector<unsigned> cpus = case_cpus(*l->c, run_.usable);
        m.machine = load_.on(cpus);
        const SpeedVerdict speed = SpeedProbe::verdict(
            probe_before_, *probe_after_, cpus, SpeedProbe::usual_change(run_.probe.points(), probes_before_end, cpus));
        m.machine.probe_change = speed.change;
        m.machine.probe_usual = speed.usual;
        m.machine.probe_spread = speed.spread;
        if (!std::isnan(speed.together)) m.machine.probe_together = speed.together;
        m.machine.slow_cpu = speed.slow;
        noisy += m.machine.noisy.value_or(false);
        slow += speed.slow;
        flagged_ += m.machine.flagged();
      }
      run_.probe.count_block(flagged_ > 0);
      run_.timeline.add_block(load_.started_unix_s(), load_.duration_s(), load_.other_share_per_cpu(), probe_before_,
                              *probe_after_, static_cast<unsigned>(measured_.size()), noisy, slow);
    }
    set_reference_times();
    while (!measured_.empty()) {
      auto& [l, m] = measured_.front();
      m.facts = l->facts;
      const RowContext row{run_.out.sidecar().run_id(), run_.request.preset, *l->c, block_.index, rep_, m};
      run_.out.csv().write_row(row_cells(row));
      if (LatencyFile* latency = run_.out.latency()) latency->write(row);
      l->result.wall_ns.push_back(m.wall_ns);
      l->result.reps.push_back(rep_);
      l->result.tasks = m.tasks ? static_cast<double>(*m.tasks) : NAN;
      measured_.erase(measured_.begin());
    }
  }

 private:
  // The times each row is compared with in this repetition (Measurement::elision_ns,
  // one_thread_ns): the elision's, and the same variant's at 1 thread, both of the row's own
  // build (an A/B run measures every case once per build). A variant is a scheduler with its
  // parameters; simulated rows take part in neither.
  void set_reference_times() {
    for (auto& [l, m] : measured_) {
      if (l->c->simulated) continue;
      for (const auto& [other, om] : measured_) {
        if (other->c->simulated || other->c->build != l->c->build) continue;
        if (other->c->scheduler->elision()) m.elision_ns = om.wall_ns;
        if (other->c->threads == 1 && other->c->scheduler == l->c->scheduler &&
            other->c->scheduler_params == l->c->scheduler_params) {
          m.one_thread_ns = om.wall_ns;
        }
      }
    }
  }

  RunState& run_;
  const Block& block_;
  const unsigned rep_;
  const SpeedProbe::Point probe_before_;
  BlockLoad load_;  // after probe_before_: the probe is no part of the block's accounting
  std::optional<SpeedProbe::Point> probe_after_;  // set when the repetition's rows are first written
  unsigned flagged_ = 0;  // its rows flagged
  std::vector<std::pair<LiveCase*, Measurement>> measured_;
};

bool Group::repetition(Block& b, const std::vector<LiveCase*>& order, unsigned rep) {
  const auto start = std::chrono::steady_clock::now();
  BlockRepetition repetition(run_, b, rep);
  for (LiveCase* l : order) {
    if (g_stop_requested.load()) return false;
    const Case& c = *l->c;
    run_.progress.update(run_.done, c.label() + (rep < run_.request.reps ? " rep " : " replacement rep ") +
                                        std::to_string(rep + 1) + "/" + std::to_string(run_.request.reps));
    repetition.measure(*l, live_subject(*l));
  }
  repetition.write();
  if (repetition.flagged()) ++b.flagged;
  b.last_repetition_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return true;
}

// The configurations [first, last) of one part (each a run of consecutive cases sharing a
// workload and its parameters), interleaved as one group (Group) when they fit the budgets
// together: their worker threads within kLiveThreadBudget, their prepared inputs within
// kInputShare of the memory budget. Otherwise they are split, in order, into groups that fit,
// run one after another, and the sidecar's `interleaving` names the groups and why. Returns false
// when a stop was requested.
bool run_part(const std::vector<std::pair<const Case*, const Case*>>& configs, RunState& run) {
  const unsigned first_block = run.next_block;
  run.next_block += static_cast<unsigned>(configs.size());
  const std::uint64_t budget = memory_budget().bytes;
  const double input_cap = budget == 0 ? INFINITY : kInputShare * static_cast<double>(budget);
  nlohmann::json groups = nlohmann::json::array();
  std::set<std::string> why;
  for (std::size_t next = 0; next < configs.size();) {
    Group group(run);
    unsigned threads = 0;
    while (next < configs.size()) {
      const auto [first, last] = configs[next];
      const unsigned need = live_threads(first, last);
      if (!group.empty() && threads + need > kLiveThreadBudget) {
        why.insert("their schedulers would hold more than " + std::to_string(kLiveThreadBudget) +
                   " worker threads together");
        break;
      }
      group.add(first, last, first_block + static_cast<unsigned>(next));
      if (group.size() > 1 && static_cast<double>(group.input_bytes()) > input_cap) {
        group.drop_last();
        why.insert("their prepared inputs would hold more than " + std::to_string(static_cast<int>(kInputShare * 100)) +
                   "% of the memory budget together");
        break;
      }
      threads += need;
      ++next;
    }
    groups.push_back(group.indices());
    if (groups.size() > 1) {  // said before the group runs, so that a stop or a failure keeps it
      std::string reasons;
      for (const std::string& w : why) reasons += (reasons.empty() ? "" : "; ") + w;
      if (groups.size() == 2) run.grouped.push_back(nullptr);
      run.grouped.back() = {{"blocks", groups}, {"why", reasons}};
    }
    if (!group.run()) return false;
  }
  return true;
}

// Every part in order. Throws what a failed run threw.
RunStatus run_blocks(const std::vector<Case>& cases, RunState& run) {
  for (std::size_t first = 0; first < cases.size();) {
    // A part's configurations: runs of consecutive cases with one workload and its parameters
    // (plan() lists a part's cases configuration by configuration). Simulated cases form
    // configurations of their own (their wall time is Valgrind's, never compared with a native
    // run's).
    std::vector<std::pair<const Case*, const Case*>> configs;
    std::size_t last = first;
    while (last < cases.size() && cases[last].part == cases[first].part) {
      std::size_t end = last;
      while (end < cases.size() && cases[end].part == cases[last].part && cases[end].workload == cases[last].workload &&
             cases[end].workload_params == cases[last].workload_params &&
             cases[end].simulated == cases[last].simulated) {
        ++end;
      }
      configs.emplace_back(cases.data() + last, cases.data() + end);
      last = end;
    }
    if (!run_part(configs, run)) return RunStatus::interrupted;
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
      if (std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.records_latency(); })) {
        latency_ = std::make_unique<LatencyFile>(LatencyFile::path_for(r.out_path));
      }
      sidecar_ = std::make_unique<Sidecar>(r, events, cases, geometry_, csv_->row_counter());
    } catch (...) {
      ::unlink(r.out_path.c_str());  // created just now, holds only the header
      if (latency_) ::unlink(latency_->path().c_str());  // created just now, empty
      throw;
    }
  } catch (const std::runtime_error& e) {
    throw ParamError(e.what());  // refused before anything ran (the trace removes itself)
  }
}

RunOutputs::~RunOutputs() = default;

RunOutcome execute(const RunRequest& r, const std::vector<Case>& cases, RunOutputs& out, HwCounters& events,
                   BuildServers servers) {
  ProgressLine progress(r.progress, cases.size() * r.reps);
  SchedTracer schedtrace(r.schedtrace_ms);
  SpeedProbe probe;
  MachineTimeline timeline(probe.cpus());
  // CPUs of unequal speed from the start (a host state the guest cannot see otherwise) are said
  // at once: the comparisons of P threads with 1 will not be judged while it lasts.
  if (const auto& at_start = probe.calibration(); at_start.size() > 1) {
    const auto [fast, slow] = std::minmax_element(at_start.begin(), at_start.end());
    if (*slow > kUnequalCpuRatio * *fast) {
      std::fprintf(stderr,
                   "schedlab: note: CPU %d runs %.2fx slower than CPU %d now (the speed probe, the same spin): while "
                   "that lasts, comparisons of P threads with 1 thread are not judged\n",
                   probe.cpus()[static_cast<std::size_t>(slow - at_start.begin())], *slow / *fast,
                   probe.cpus()[static_cast<std::size_t>(fast - at_start.begin())]);
    }
  }
  RunState run{r, out, events, progress, schedtrace, probe, timeline, usable_cpus(), 0, 0, 0, {}, std::mt19937_64(r.order_seed)};
  run.servers = std::move(servers);

  RunOutcome outcome;
  try {
    outcome.status = run_blocks(cases, run);
  } catch (const std::exception& e) {
    // After a second interrupt the go-runtime program is killed under the repetition waiting
    // for it, which then fails; whichever of this thread and the watcher writes the sidecar
    // last, it must say interrupted.
    if (g_stopping_now.load()) {
      outcome.status = RunStatus::interrupted;
    } else {
      outcome.status = RunStatus::failed;
      outcome.error = e.what();
    }
  }
  outcome.results = std::move(run.results);
  outcome.rows = out.csv().rows();
  out.sidecar().record("interleaving", {{"rule", kInterleaving}, {"split", run.grouped}});
  out.sidecar().record("replacements",
                       {{"rule", kReplacementRule},
                        {"max_per_block", r.replace_flagged},
                        {"max_wait_s", std::chrono::duration<double>(kSteadyWaitMax).count()},
                        {"budget_share", kReplacementBudgetShare},
                        {"blocks", run.replaced},
                        {"groups", run.budgets},
                        {"unreplaced", run.unreplaced},
                        {"waits",
                         {{"rounds", run.steady_waits},
                          {"seconds", run.steady_wait_s},
                          {"still_unsteady", run.steady_timeouts}}}});
  out.sidecar().record("speed_probe", probe.summary());
  // The timeline in a file of its own beside the CSV (never over an existing one; a full disk
  // leaves the sidecar saying why it is missing, the run's status unchanged).
  const std::string timeline_path = machine_timeline_path_for(r.out_path);
  const std::string timeline_error = write_new_file(timeline_path, timeline.json(probe.points()).dump() + "\n");
  out.sidecar().record("machine_timeline",
                       timeline.sidecar_json(std::filesystem::path(timeline_path).filename().string(), timeline_error));
  for (const MachineTimeline::Episode& e : timeline.episodes()) outcome.machine.push_back(e);
  if (!run.servers.empty()) {
    nlohmann::json builds = nlohmann::json::object();
    for (const auto& [build, server] : run.servers) builds[build] = server->describe();
    out.sidecar().record("ab", {{"builds", builds}, {"rule", kAbRule}});
  }
  outcome.sidecar_error = out.sidecar().finish(status_word(outcome.status), outcome.error, outcome.rows, events);
  if (!outcome.sidecar_error.empty() && outcome.status == RunStatus::complete) {
    outcome.status = RunStatus::failed;  // the rows are whole, but nothing on disk says the run completed
    outcome.error = std::exchange(outcome.sidecar_error, "");
  }
  return outcome;
}

}  // namespace schedlab
