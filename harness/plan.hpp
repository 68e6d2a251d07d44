// plan.hpp: from a request (the command line or a preset) to the list of cases to measure.
//
//   RunRequest ──plan()──► Case = (scheduler × its params) × (workload × its params) × threads
//
// Everything that can be refused is refused here, before the first run, so that a typo does not
// cost a half-finished benchmark: unknown names, out-of-range values, a parameter that applies
// to nothing selected. The runner (runner.hpp) then measures the cases.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "counters/cache_geometry.hpp"
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
  // Back ends this part adds to --counters for its cases (a preset run's "counters"):
  // simulated (Valgrind's cache simulator, counters/sim.hpp) and modelled (footprints replayed
  // through per-core caches, counters/cache_model.hpp).
  bool simulated = false;
  bool modelled = false;
};

struct RunRequest {
  std::vector<RunPart> parts;  // the CLI makes one; a preset may list several
  unsigned reps = 5;
  unsigned warmup = 1;  // untimed runs before the repetitions (pools filled, caches warm)
  // --replace-flagged: at most this many extra repetitions per block, run after the others to
  // replace the block's repetitions flagged slow_cpu or noisy (runner_replacements.hpp).
  unsigned replace_flagged = 0;
  std::string out_path;  // the CSV; its sidecar is derived from it
  std::string preset;    // the preset this request came from, or empty
  std::vector<std::string> command_line;
  bool progress = false;  // print a progress line on stderr
  std::string counters = "default";  // --counters: events, sim, model (counters/hw_counters.hpp)
  std::string sim_l1, sim_ll;        // --sim-l1, --sim-ll: SIZE,ASSOC,LINE; empty: this machine's
  bool require_counters = false;     // refuse to run if a selected counter is unavailable
  unsigned schedtrace_ms = 0;        // --schedtrace=MS (0: off)
  std::string trace_path;            // --trace=FILE.json (empty: off)
  std::size_t trace_max_events = 1000000;
  std::uint64_t memory_budget = 0;  // --memory-budget in bytes; 0: the default (memory_budget.hpp)
  // --filter: an ECMAScript regular expression; only the cases whose label() it matches
  // (anywhere in it, as Google Benchmark's --benchmark_filter) run. Empty: every case.
  std::string filter;
  // Seeds the order of the cases within each repetition (runner_interleaving.hpp); recorded in
  // the sidecar, so that a run's order can be repeated with --order-seed.
  std::uint64_t order_seed = 0;
  // --against: the other build of an A/B run (served_subject.hpp); empty: not an A/B run.
  std::string against;
};

// One thing to measure: a configured scheduler running a configured workload on `threads`
// worker threads.
struct Case {
  const SchedulerEntry* scheduler = nullptr;
  ParamValues scheduler_params;
  const WorkloadEntry* workload = nullptr;
  ParamValues workload_params;
  unsigned threads = 1;
  // Measured under Valgrind's cache simulator (sim_subject.hpp): its wall time is not
  // comparable with a native run's.
  bool simulated = false;
  // Footprints recorded for the per-core cache model.
  bool modelled = false;
  // The RunPart it came from (its index in RunRequest::parts): the runner interleaves the
  // configurations of one part.
  unsigned part = 0;
  // In an A/B run (--against), the build that measures it: kBuildA (this binary), kBuildA2 (this
  // binary again, the A/A control) or kBuildB (the other); empty otherwise.
  std::string build;

  // "steal-half handoff=off fib-go(n=27 cutoff=0) threads=2", " [sim]" appended when simulated:
  // what --filter matches, and how errors, traces and schedtrace name the case.
  std::string label() const;
  // The value of parameter `name` in this case (a workload's first, then the scheduler's), or
  // "" when neither declares it: the CSV's parameter columns.
  std::string param(const std::string& name) const;
  // "steal-half handoff=off": the scheduler plus the parameters that differ from its defaults,
  // and in an A/B run its build ("steal-half handoff=off build=B").
  std::string variant() const;
  // variant() without the parameters that set up the machine rather than the design
  // (ParamSpec::machine_setup: pinning, the A/A replica label): "steal-half handoff=off" for
  // "steal-half pin=on handoff=off". What the summary finds a reference by.
  std::string design() const;
  // Whether its rows may carry a latency distribution (latency_file.hpp): its scheduler records
  // scheduling delays (--latency on) or its workload measures its requests' latency. Never for
  // a simulated case (Valgrind's times).
  bool records_latency() const;
};

// Whether two cases ran with the same machine settings (the ParamSpec::machine_setup parameters
// either takes): a parameter one of them lacks counts at the other's default (go-runtime, which
// takes no --pin, runs unpinned: as a case with pin=off; the elision, which takes no --replica, as
// replica a).
bool same_machine_setup(const Case& a, const Case& b);

// The builds of an A/B run (Case::build).
inline constexpr char kBuildA[] = "A";
inline constexpr char kBuildA2[] = "A2";
inline constexpr char kBuildB[] = "B";

// A case as JSON (scheduler, its parameters, workload, its parameters, threads) for a child that
// measures it in another process, and back: case_from_json resolves the parameters with this
// binary's registry and throws ParamError for a name or parameter it does not know.
nlohmann::json case_json(const Case& c);
Case case_from_json(const nlohmann::json& j);

// Expands and validates a request, keeping the cases request.filter matches. Throws ParamError
// (one line: the problem and the fix), also for a filter that is not a regular expression or
// that matches no case.
std::vector<Case> plan(const RunRequest& request);

// The cache geometry of the simulator and the model (counters/cache_geometry.hpp) for these
// cases: from --sim-l1, --sim-ll and sysfs when a case is simulated or modelled, else nullopt.
// Throws ParamError for a bad option or a cache sysfs does not describe.
std::optional<SimGeometry> cache_geometry_for(const RunRequest& request, const std::vector<Case>& cases);

// 1, 2, 4, ... below the CPUs this process may use, then that count itself: the scaling sweep
// that fits the machine (`--threads auto`; a preset's "threads": "auto").
std::vector<unsigned> auto_thread_counts();
// The thread counts of a --threads list item or a preset's entry: a count in 1..kMaxThreads,
// "auto", or "all" (the CPUs this process may use: the field preset's "all usable CPUs", the
// thread count of the field's published summary tables). Throws ParamError naming the value and
// what is accepted.
std::vector<unsigned> thread_counts(const std::string& item);

}  // namespace schedlab
