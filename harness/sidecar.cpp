#include "sidecar.hpp"

#include <unistd.h>

#include <algorithm>
#include <initializer_list>

#include "counters/hw_counters.hpp"
#include "counters/sim.hpp"
#include "diagnostics.hpp"
#include "latency_file.hpp"
#include "memory_budget.hpp"
#include "plan.hpp"
#include "registry.hpp"
#include "row.hpp"
#include "runtime/live_tasks.hpp"  // the peak gauge's batch, stated in the notes

namespace schedlab {
namespace {

// The sidecar's word on the simulated and modelled back ends, when the run uses them: the
// geometry, what the simulator sees, what the model is.
void describe_cache_back_ends(nlohmann::json& d, const std::vector<Case>& cases, const std::optional<SimGeometry>& g) {
  const bool simulated = std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.simulated; });
  const bool modelled = std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.modelled; });
  if (!g) return;
  if (simulated) {
    d["simulator"] = {{"tool", valgrind_version() + " --tool=callgrind --cache-sim=yes"},
                      {"geometry", g->json()},
                      {"region", "CALLGRIND_ZERO_STATS before the clock starts, CALLGRIND_DUMP_STATS after it stops; "
                                 "set-up, warm-up, the result check and teardown are not counted"},
                      {"sees", kSimulatorSees}};
  }
  if (modelled) {
    d["cache_model"] = {{"geometry", g->ll.json()},
                        {"from", g->ll_from},
                        {"what", "model_l2_misses: a model, not a measurement: the recorded footprints of locality "
                                 "and matmul replayed through one LRU cache per worker of this geometry, a write "
                                 "invalidating the other workers' copies (harness/counters/cache_model.hpp)"}};
  }
}

// `data` dumped with each string value in `holes` cut out, quotes and all: the pieces a
// LastWords writer fills in. `holes` are in the order they appear in the dump (its keys are
// sorted: "error" < "rows"); each is found after the one before.
template <std::size_t N>
void cut(const nlohmann::json& data, std::initializer_list<const char*> holes, std::string (&pieces)[N]) {
  const std::string text = data.dump(2) + "\n";
  std::size_t from = 0, i = 0;
  for (const char* hole : holes) {
    const std::string quoted = nlohmann::json(hole).dump();
    const std::size_t at = text.find(quoted, from);
    pieces[i++] = text.substr(from, at - from);
    from = at + quoted.size();
  }
  pieces[i] = text.substr(from);
}

// The sidecar's word on the latency file (latency_file.hpp).
constexpr char kLatencyFileWhat[] =
    "one JSON line per row and latency kind (sched_delay: the scheduling delays; request: an open-loop workload's "
    "request latency), keyed by run_id, block_index, rep and case, with the distribution's buckets [low_ns, "
    "width_ns, count]: schedlab's own (latency.hpp: values under 128 ns exact, above 64 buckets per power of two, "
    "every percentile within 1/128), or Go's /sched/latencies:seconds (16 per power of two)";

// Values no real field holds (a control character: JSON escapes it, no user types it).
constexpr char kErrorHole[] = "\x01error";
constexpr char kRowsHole[] = "\x01rows";

}  // namespace

// Every scheduler's and workload's parameters with their defaults, canonical: what a variant's
// parameters are compared with (scripts/schedlab_results names a variant by what it changed);
// and the parameters that set up the machine rather than the design (ParamSpec::machine_setup).
nlohmann::json parameter_defaults() {
  auto defaults = [](const std::vector<ParamSpec>& specs) {
    nlohmann::json out = nlohmann::json::object();
    for (const ParamSpec& p : specs) out[p.name] = p.canonical(p.default_value);
    return out;
  };
  nlohmann::json out = {{"schedulers", nlohmann::json::object()}, {"workloads", nlohmann::json::object()},
                         {"setup", nlohmann::json::array()}};
  for (const SchedulerEntry& s : scheduler_registry()) out["schedulers"][s.name] = defaults(s.params);
  for (const WorkloadEntry& w : workload_registry()) out["workloads"][w.name] = defaults(w.params);
  for (const ParamSpec& p : all_param_specs()) {
    if (p.machine_setup) out["setup"].push_back(p.name);  // ParamSpec::machine_setup: the claims read it
  }
  return out;
}

Sidecar::Sidecar(const RunRequest& r, const HwCounters& events, const std::vector<Case>& cases,
                 const std::optional<SimGeometry>& geometry, const std::atomic<std::size_t>& rows)
    : file_(metadata_path_for(r.out_path)), rows_(rows) {
  run_id_ = compact_timestamp() + "-" + host_name() + "-" + std::to_string(::getpid());
  nlohmann::json& d = file_.data();
  d["run_id"] = run_id_;
  d["csv"] = r.out_path;
  d["preset"] = r.preset;
  d["command_line"] = r.command_line;
  if (!r.filter.empty()) d["filter"] = r.filter;
  d["started_utc"] = utc_timestamp();
  d["machine"] = machine_info();
  d["reps"] = r.reps;
  d["order_seed"] = r.order_seed;
  d["warmup_runs"] = r.warmup;
  d["counters"] = counter_metadata(events);
  const MemoryBudget budget = memory_budget();
  d["memory_budget"] = {{"bytes", budget.bytes}, {"source", budget.source}};
  d["status"] = "running";
  d["notes"] = nlohmann::json::array(
      {"peak_live_tasks is exact with one worker thread and exact to within " +
           std::to_string(LiveTaskGauge::kLiveBatch) + " tasks per additional worker (batched gauge)",
       "wall_ns covers Scheduler::run of the workload's root task; warm-up runs are not recorded",
       "cpu_ns, ru_nvcsw and ru_nivcsw are getrusage(RUSAGE_SELF) differences: the whole process",
       "go-runtime rows: wall_ns and tasks as reported by the Go program for its measured region, threads_created "
       "from its threadcreate profile, and with --latency on the delay_* columns from Go's own "
       "/sched/latencies:seconds (read before and after the measured region; Go samples one transition in 8); "
       "other columns are not measured for them"});
  d["schema"] = schema_json();
  d["parameters"] = parameter_defaults();
  d["peers"] = peer_names();  // the report's peers figure reads which schedulers are peers
  describe_cache_back_ends(d, cases, geometry);
  if (std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.records_latency(); })) {
    d["latency_file"] = {{"path", LatencyFile::path_for(r.out_path)}, {"what", kLatencyFileWhat}};
  }
  // What the workloads' "auto" parameters chose on this machine, and why (WorkloadEntry::sizing).
  for (const WorkloadEntry& w : workload_registry()) {
    if (w.sizing && std::any_of(cases.begin(), cases.end(), [&](const Case& c) { return c.workload->name == w.name; })) {
      d[w.name + "_sizing"] = w.sizing();
    }
  }
  file_.create();
  prepare_last_words();
  set_overflow_context("no case yet");
}

Sidecar::~Sidecar() { set_last_words({}); }

// The texts depend only on what the sidecar holds, which changes at its creation and its finish
// only: prepared once (two dumps of ~30 KB; per repetition they cost ~125 us of harness time).
// What changes during the run, the row count and the case, is read at the end.
void Sidecar::prepare_last_words() {
  LastWords w;
  w.path = file_.path();
  w.tmp = file_.path() + ".last.tmp";  // not save()'s .tmp: the main thread may be writing that
  w.rows = &rows_;
  nlohmann::json d = file_.data();
  d["rows"] = kRowsHole;
  d["status"] = "interrupted";
  cut(d, {kRowsHole}, w.interrupted);
  d["status"] = "failed";
  d["error"] = kErrorHole;
  cut(d, {kErrorHole, kRowsHole}, w.failed);
  set_last_words(std::move(w));
}

void Sidecar::arm_last_words(const std::string& label) { set_overflow_context(label.c_str()); }

std::string Sidecar::finish(const std::string& status, const std::string& error, std::size_t rows,
                            const HwCounters& events) noexcept {
  try {
    set_last_words({});
    nlohmann::json& d = file_.data();
    d["status"] = status;
    if (!error.empty()) d["error"] = error;
    d["rows"] = rows;
    d["counters"] = counter_metadata(events);
    d["finished_utc"] = utc_timestamp();
    file_.save();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace schedlab
