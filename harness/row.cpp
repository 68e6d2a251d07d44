#include "row.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "counters/hw_counters.hpp"
#include "assert.hpp"
#include "metadata.hpp"
#include "registry.hpp"
#include "speed_probe.hpp"

namespace schedlab {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

template <class T>
std::string optional_cell(const std::optional<T>& v, int decimals = 0) {
  if (!v) return "";
  if constexpr (std::is_floating_point_v<T>) return fixed(*v, decimals);
  return std::to_string(*v);
}

const char* kNeverEmpty = "never";
// The registry's schedulers for which `pred` holds, as "a, b, c": the columns' "empty when"
// texts name them from the entries, not from a list kept by hand.
template <class Pred>
std::string scheduler_names(Pred pred) {
  std::string names;
  for (const SchedulerEntry& e : scheduler_registry()) {
    if (pred(e)) names += (names.empty() ? "" : ", ") + e.name;
  }
  return names;
}

// The schedulers that declare parameter `param` (`takes`), or that do not.
std::string schedulers_taking(const std::string& param, bool takes) {
  return scheduler_names([&](const SchedulerEntry& e) {
    return std::any_of(e.params.begin(), e.params.end(), [&](const ParamSpec& p) { return p.name == param; }) == takes;
  });
}

// When counter k's cell is empty: the schedulers whose entries do not declare it
// (SchedulerEntry::counters, checked against their runs by the conformance tests).
std::string scheduler_unobserved(std::size_t k) {
  const std::string names = scheduler_names([k](const SchedulerEntry& e) { return !e.counters[k]; });
  return (names.empty() ? std::string() : "the scheduler does not observe it (" + names + "), or ") +
         "the build has SCHEDLAB_STATS=OFF";
}
const char* kOtherProcess = "go-runtime rows (the program runs in another process)";

void identification(std::vector<Column>& s) {
  using T = ColumnType;
  s.push_back({"run_id", T::text, "", "id", "this run: start time, host and process id", kNeverEmpty,
               [](const RowContext& r) { return r.run_id; }});
  s.push_back({"preset", T::text, "", "id", "the preset the run came from", "the run did not come from a preset",
               [](const RowContext& r) { return r.preset; }});
  s.push_back({"scheduler", T::text, "", "id", "the scheduler (`schedlab list`)", kNeverEmpty,
               [](const RowContext& r) { return r.c.scheduler->name; }});
  s.push_back({"workload", T::text, "", "id", "the workload (`schedlab list`)", kNeverEmpty,
               [](const RowContext& r) { return r.c.workload->name; }});
  s.push_back({"threads", T::integer, "threads", "id", "worker threads (Go's GOMAXPROCS)", kNeverEmpty,
               [](const RowContext& r) { return std::to_string(r.c.threads); }});
  s.push_back({"rep", T::integer, "", "id",
               "repetition, from 0; from `--reps` on, the extra repetitions that replaced flagged ones "
               "(`--replace-flagged`)",
               kNeverEmpty,
               [](const RowContext& r) { return std::to_string(r.rep); }});
  s.push_back({"block_index", T::integer, "", "id",
               "the block, from 0: the cases of one workload configuration; repetition i of every configuration "
               "of a part runs before repetition i+1 of any, each configuration's cases back to back in a shuffled "
               "order; rows with the same run_id, block_index and rep ran back to back",
               kNeverEmpty, [](const RowContext& r) { return std::to_string(r.block); }});
  s.push_back({"build", T::text, "", "id",
               "the build that measured the row in an A/B run (`--against`): A this binary, A2 this binary again in "
               "another server (the A/A control), B the other binary",
               "the run is not an A/B run", [](const RowContext& r) { return r.c.build; }});
  s.push_back({"scheduler_params", T::text, "", "id", "every scheduler parameter, `name=value`",
               "the scheduler has no parameters",
               [](const RowContext& r) { return describe(r.c.scheduler->params, r.c.scheduler_params); }});
  s.push_back({"workload_params", T::text, "", "id", "every workload parameter, `name=value`",
               "the workload has no parameters",
               [](const RowContext& r) { return describe(r.c.workload->params, r.c.workload_params); }});
}

// One column per parameter of any scheduler or workload (`schedlab list` describes them).
void parameters(std::vector<Column>& s) {
  for (const ParamSpec& p : all_param_specs()) {
    const bool number = p.kind == ParamKind::integer || p.kind == ParamKind::size;
    s.push_back({p.column(), number ? ColumnType::integer : ColumnType::text,
                 p.kind == ParamKind::size ? "bytes" : "", "param", "--" + p.name + ": " + param_meaning(p.name, /*with_accepted=*/false),
                 "the parameter does not apply to the row's scheduler and workload",
                 [name = p.name](const RowContext& r) { return r.c.param(name); }});
  }
}

void results(std::vector<Column>& s) {
  using T = ColumnType;
  s.push_back({"wall_ns", T::integer, "ns", "result",
               "time of the measured region (the root task under Scheduler::run)", kNeverEmpty,
               [](const RowContext& r) { return fixed(r.m.wall_ns, 0); }});
  s.push_back({"tasks", T::integer, "tasks", "result", "tasks executed, the root included",
               "neither the scheduler nor the workload knows the count",
               [](const RowContext& r) { return optional_cell(r.m.tasks); }});
  s.push_back({"ns_per_task", T::real, "ns", "result", "wall_ns / tasks",
               "neither the scheduler nor the workload knows the task count", [](const RowContext& r) {
                 return r.m.tasks ? fixed(r.m.wall_ns / static_cast<double>(*r.m.tasks), 2) : std::string();
               }});
  s.push_back({"speedup", T::real, "", "result",
               "the sequential elision's wall_ns in the same block repetition over this row's: T_S / T_P, the "
               "speedup over the program without tasks (`--scheduler elision`)",
               "the block has no elision row (presets always measure one; add `--scheduler elision`), or the "
               "row was simulated",
               [](const RowContext& r) { return r.m.elision_ns ? fixed(*r.m.elision_ns / r.m.wall_ns, 4) : std::string(); }});
  s.push_back({"work_overhead", T::real, "", "result",
               "this variant's wall_ns at 1 thread over the sequential elision's, in the same block repetition: "
               "T_1 / T_S, what spawning, joining and scheduling the tasks cost on one thread",
               "the block has no elision row or no 1-thread row of this variant, or the row was simulated",
               [](const RowContext& r) {
                 return r.m.elision_ns && r.m.one_thread_ns ? fixed(*r.m.one_thread_ns / *r.m.elision_ns, 4)
                                                            : std::string();
               }});
  s.push_back({"simulated", T::integer, "", "result",
               "1 when the repetition ran under Valgrind's cache simulator (`--counters sim`): its wall_ns, "
               "ns_per_task and cpu_ns are Valgrind's, tens of times a native run's, and plots and claims leave "
               "them out of every time comparison; 0 for a native run",
               kNeverEmpty, [](const RowContext& r) { return std::string(r.c.simulated ? "1" : "0"); }});
  s.push_back({"cpu_ns", T::integer, "ns", "usage",
               "process user + system CPU time during the run (getrusage); cpu_ns / (wall_ns x "
               "threads) is the utilisation",
               kOtherProcess, [](const RowContext& r) { return optional_cell(r.m.cpu_ns, 0); }});
}

// "p50", "p90", "p99", "p999": a percentile's part of a column name.
std::string percentile_name(double q) {
  std::string digits = fixed(q, q == std::floor(q) ? 0 : 1);
  std::erase(digits, '.');
  return "p" + digits;
}

// The percentiles, max and count of one latency distribution (latency.hpp), `prefix`_p50_ns ...
void distribution_columns(std::vector<Column>& s, const std::string& prefix, const std::string& what,
                          const std::string& empty_when,
                          std::function<const LatencyDistribution*(const RowContext&)> of) {
  auto cell = [of](std::function<std::optional<std::uint64_t>(const LatencyDistribution&)> value) {
    return [of, value](const RowContext& r) {
      const LatencyDistribution* d = r.c.simulated ? nullptr : of(r);
      if (d == nullptr) return std::string();
      return optional_cell(value(*d));
    };
  };
  for (double q : kLatencyPercentiles) {
    s.push_back({prefix + "_" + percentile_name(q) + "_ns", ColumnType::integer, "ns", "latency",
                 what + ": the " + fixed(q, q == std::floor(q) ? 0 : 1) + "th percentile (nearest rank)", empty_when,
                 cell([q](const LatencyDistribution& d) { return d.percentile(q); })});
  }
  s.push_back({prefix + "_max_ns", ColumnType::integer, "ns", "latency", what + ": the largest", empty_when,
               cell([](const LatencyDistribution& d) { return d.max(); })});
  s.push_back({prefix + "_count", ColumnType::integer, "", "latency", what + ": how many were recorded", empty_when,
               cell([](const LatencyDistribution& d) { return std::optional<std::uint64_t>(d.count()); })});
}

// Latency (latency.hpp): the scheduling delay of the run's tasks, and an open-loop workload's
// request latency. Each distribution's buckets are in the run's latency file (latency_file.hpp).
void latencies(std::vector<Column>& s) {
  distribution_columns(
      s, "delay",
      "scheduling delay, from a task becoming runnable (spawned, readied by a join, a wait group or the poller, "
      "back from a blocking call without its P) to its first instruction on a worker, every such event of the run "
      "(go-runtime: Go's own /sched/latencies:seconds over the measured region, which Go samples, one transition "
      "in 8); schedlab's within 1/128 of the exact figure, Go's buckets within 1/32; the buckets are in the run's "
      "latency file",
      "--latency off (the default; " + schedulers_taking("latency", true) +
          " take it), a scheduler that cannot see its tasks become runnable (" + schedulers_taking("latency", false) +
          ": docs/latency.md), or the row was simulated",
      [](const RowContext& r) { return r.m.sched_delay ? &*r.m.sched_delay : nullptr; });
  const std::string unmeasured = "the workload sends no requests on a schedule (every workload but netmix --load open)";
  distribution_columns(
      s, "request",
      "request latency under open-loop load (netmix --load open), from each request's intended send time on the "
      "generator's schedule to the end of its reply, so that a stalled server cannot hide its stall (coordinated "
      "omission); within 1/128 of the exact figure; the buckets are in the run's latency file",
      unmeasured, [](const RowContext& r) { return r.m.request ? &r.m.request->latency : nullptr; });
  s.push_back({"request_rate", ColumnType::real, "requests/s", "latency",
               "requests answered per second, from the generator's schedule's start to the last reply: the throughput "
               "the offered --rate achieved",
               unmeasured, [](const RowContext& r) {
                 return r.m.request && !r.c.simulated ? fixed(r.m.request->rate_per_s, 1) : std::string();
               }});
}

void scheduler_counters(std::vector<Column>& s) {
  for (std::size_t k = 0; k < kCounterCount; ++k) {
    const CounterInfo& info = kCounters[k];
    s.push_back({std::string(info.name), ColumnType::integer, std::string(info.unit), "scheduler",
                 std::string(info.meaning) + (info.per_worker ? " (summed over workers)" : ""),
                 scheduler_unobserved(k),
                 [k](const RowContext& r) {
                   return r.m.counters.measured[k] ? std::to_string(r.m.counters.value[k]) : std::string();
                 }});
  }
}

void rusage_switches(std::vector<Column>& s) {
  s.push_back({"ru_nvcsw", ColumnType::integer, "switches", "usage",
               "voluntary context switches of the process during the run (getrusage)", kOtherProcess,
               [](const RowContext& r) { return optional_cell(r.m.nvcsw); }});
  s.push_back({"ru_nivcsw", ColumnType::integer, "switches", "usage",
               "involuntary context switches of the process during the run (getrusage)", kOtherProcess,
               [](const RowContext& r) { return optional_cell(r.m.nivcsw); }});
}

void events(std::vector<Column>& s) {
  for (const HwEvent& e : hw_events()) {
    s.push_back({e.column, ColumnType::integer, "events", e.hardware ? "hardware" : "kernel",
                 e.what + ", summed over the worker threads",
                 e.hardware ? "the machine has no PMU or refuses the event (`schedlab counters` says "
                              "why), the scheduler has no long-lived worker threads (os-threads, "
                              "go-runtime), or the row was simulated"
                            : "the kernel refuses the event (`schedlab counters` says why), the "
                              "scheduler has no long-lived worker threads (os-threads, go-runtime), "
                              "or the row was simulated",
                 [column = e.column](const RowContext& r) {
                   auto it = r.m.events.find(column);
                   return it == r.m.events.end() ? std::string() : std::to_string(it->second);
                 }});
  }
}

// Valgrind's simulated caches (counters/sim.hpp) and the per-core model (counters/cache_model.hpp).
void simulated_and_modelled(std::vector<Column>& s) {
  using T = ColumnType;
  const char* unsimulated = "the row was not simulated (`--counters sim`)";
  const std::string region = " in the measured region, all threads, as Valgrind's simulator counts them";
  s.push_back({"sim_instructions", T::integer, "instructions", "simulated", "instructions executed" + region + " (Ir)",
               unsimulated, [](const RowContext& r) { return r.m.sim ? std::to_string(r.m.sim->instructions) : std::string(); }});
  s.push_back({"sim_l1d_misses", T::integer, "misses", "simulated",
               "L1 data cache read + write misses" + region + " (D1mr + D1mw)", unsimulated,
               [](const RowContext& r) { return r.m.sim ? std::to_string(r.m.sim->l1d_misses) : std::string(); }});
  s.push_back({"sim_ll_misses", T::integer, "misses", "simulated",
               "last-level data read + write misses" + region +
                   " (DLmr + DLmw); the simulated last level has the per-core L2's geometry unless --sim-ll says "
                   "otherwise (the sidecar's `simulator`), and is one hierarchy shared by all threads, run one at a time",
               unsimulated, [](const RowContext& r) { return r.m.sim ? std::to_string(r.m.sim->ll_misses) : std::string(); }});
  s.push_back({"model_l2_misses", T::integer, "misses", "model",
               "modelled, not measured: the tasks' recorded footprints replayed through one LRU cache per worker of "
               "the L2's geometry, a write invalidating the other workers' copies (the sidecar's `cache_model`)",
               "footprints were not recorded (`--counters model`), the workload does not declare its "
               "footprint (every workload but locality and matmul), or more threads ran tasks than the case "
               "has workers (os-threads: a thread per task)",
               [](const RowContext& r) { return optional_cell(r.m.model_l2_misses); }});
}

// What the workload says about itself.
void workload_facts(std::vector<Column>& s) {
  using T = ColumnType;
  s.push_back({"work_span_ratio", T::real, "", "workload",
               "total work over the longest task (W / Lmax): no schedule on P threads beats an efficiency "
               "of min(1, W / (P x Lmax))",
               "the workload does not know its task lengths (every workload but loops)",
               [](const RowContext& r) { return optional_cell(r.m.facts.work_span_ratio, 3); }});
  s.push_back({"round_robin_ratio", T::real, "", "workload",
               "what a static split must lose on these task lengths: the makespan of task i on processor "
               "i mod P (fair's rule) over the best possible, max(W/P, Lmax), computed from the lengths, "
               "not measured; the claims judge fair against stealing only where it leaves room",
               "the workload does not know its task lengths (every workload but loops)",
               [](const RowContext& r) { return optional_cell(r.m.facts.round_robin_ratio, 3); }});
}

// What else ran: a repetition is compared with others of its block only if the machine was
// quiet enough (measure.hpp, kNoisyShare); a case with more threads than CPUs is marked.
void machine(std::vector<Column>& s) {
  using T = ColumnType;
  s.push_back({"started_unix_s", T::real, "s", "machine",
               "when the block's repetition began, in seconds since 1970-01-01 UTC (the system clock): to line rows "
               "up with other logs (a co-tenant's bursts, the host's monitoring)",
               kNeverEmpty, [](const RowContext& r) { return optional_cell(r.m.machine.started_unix_s, 3); }});
  s.push_back({"loadavg_1m", T::real, "", "machine", "1-minute load average at the start of the block's repetition",
               "the kernel does not report it", [](const RowContext& r) { return optional_cell(r.m.machine.loadavg_1m, 2); }});
  s.push_back({"other_cpu_ns", T::integer, "ns", "machine",
               "CPU time other processes used on the CPUs the row's case ran on (its first `threads` CPUs with "
               "--pin on, else every usable one) during the block's repetition (every case of the block once): "
               "/proc/stat's busy time of those CPUs minus the most of it this process can have used, so a lower "
               "bound, at /proc/stat's 10 ms resolution",
               "/proc/stat cannot be read", [](const RowContext& r) { return optional_cell(r.m.machine.other_cpu_ns, 0); }});
  s.push_back({"steal_ns", T::integer, "ns", "machine",
               "time the hypervisor gave the row's CPUs to others during the block's repetition (/proc/stat steal)",
               "the kernel reports no steal time", [](const RowContext& r) { return optional_cell(r.m.machine.steal_ns, 0); }});
  s.push_back({"noisy", T::integer, "", "machine",
               "1 when other processes used more than " + std::to_string(static_cast<int>(kNoisyShare * 100)) +
                   "% of the CPU time of the row's CPUs during the block's repetition (other_cpu_ns, and at least " +
                   std::to_string(static_cast<int>(kNoisyMinTicks)) +
                   " clock ticks of it, above /proc/stat's rounding); claims leave such rows out",
               "other_cpu_ns is not measured", [](const RowContext& r) {
                 return r.m.machine.noisy ? std::string(*r.m.machine.noisy ? "1" : "0") : std::string();
               }});
  s.push_back({"slow_cpu", T::integer, "", "machine",
               "1 when the speed of one of the row's CPUs changed during the block's repetition: the speed probe (a "
               "fixed spin on each CPU, and on every CPU at once, before and after the block's repetition) changed "
               "by more than " + std::to_string(static_cast<int>(kSlowCpuShare * 100)) +
                   "% either way on one of them, or at once for a case on several (probe_change), and by more than "
                   "it usually did between two probes then (probe_usual); claims leave such rows out",
               kNeverEmpty, [](const RowContext& r) {
                 return r.m.machine.slow_cpu ? std::string(*r.m.machine.slow_cpu ? "1" : "0") : std::string();
               }});
  s.push_back({"probe_change", T::real, "", "machine",
               "the largest ratio, either way, between a probe after the block's repetition and before it, over the "
               "row's CPUs (and the spins at once for a case on several): 1.00 the speed held still, 2.00 it halved "
               "or doubled",
               kNeverEmpty, [](const RowContext& r) { return optional_cell(r.m.machine.probe_change, 3); }});
  s.push_back({"probe_usual", T::real, "", "machine",
               "how much the speed of the row's CPUs usually changed between two consecutive probes just before the "
               "block's repetition (the " + std::to_string(static_cast<int>(kUsualQuantile * 100)) + "th percentile of the last " +
                   std::to_string(kUsualWindow) + " changes): 1.01 a quiet host, 1.8 one whose "
               "vCPUs' speed flickers; a probe_change no larger is how every block ran then, and flags nothing",
               kNeverEmpty, [](const RowContext& r) { return optional_cell(r.m.machine.probe_usual, 3); }});
  s.push_back({"probe_spread", T::real, "", "machine",
               "the slowest of the row's CPUs over the fastest, in absolute time for the same spin, before or after "
               "the block's repetition (the larger): 1.00 CPUs of equal speed, 1.50 one ran 1.5x slower; above " +
                   fixed(kUnequalCpuRatio, 2) +
                   " the claims do not judge a comparison of this row with one at 1 thread on this block",
               kNeverEmpty, [](const RowContext& r) { return optional_cell(r.m.machine.probe_spread, 3); }});
  s.push_back({"probe_together", T::real, "", "machine",
               "the spins on every CPU at once (started together; the time from the first start to the last end) "
               "over the slowest CPU's spin alone, before or after the block's repetition (the larger): about 1 when "
               "the CPUs run at once, about 2 when the host runs them only in turns; above " +
                   fixed(kInTurnsRatio, 2) +
                   " the claims do not judge a comparison of this row with one at 1 thread on this block",
               "the row's case ran on one CPU, or this process may use one",
               [](const RowContext& r) { return optional_cell(r.m.machine.probe_together, 3); }});
  s.push_back({"oversubscribed", T::integer, "", "machine",
               "1 when the case has more worker threads than CPUs this process may use; claims leave it out",
               kNeverEmpty, [](const RowContext& r) { return std::string(r.c.threads > usable_cpus() ? "1" : "0"); }});
}

std::vector<Column> build() {
  std::vector<Column> s;
  identification(s);
  parameters(s);
  results(s);
  latencies(s);
  scheduler_counters(s);
  rusage_switches(s);
  events(s);
  simulated_and_modelled(s);
  workload_facts(s);
  machine(s);
  // A CSV header names each column once (a parameter named like a fixed column would shadow it).
  std::set<std::string> names;
  for (const Column& c : s) SCHEDLAB_ASSERT(names.insert(c.name).second, "CSV column names are unique");
  return s;
}

const char* type_name(ColumnType t) {
  switch (t) {
    case ColumnType::text:
      return "text";
    case ColumnType::integer:
      return "integer";
    case ColumnType::real:
      return "real";
  }
  return "text";
}

}  // namespace

const std::vector<Column>& columns() {
  static const std::vector<Column> schema = build();
  return schema;
}

std::vector<std::string> header() {
  std::vector<std::string> names;
  for (const Column& c : columns()) names.push_back(c.name);
  return names;
}

std::vector<std::string> row_cells(const RowContext& r) {
  std::vector<std::string> cells;
  cells.reserve(columns().size());
  for (const Column& c : columns()) cells.push_back(c.fill(r));
  return cells;
}

nlohmann::json schema_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const Column& c : columns()) {
    out.push_back({{"name", c.name}, {"type", type_name(c.type)}, {"unit", c.unit}, {"group", c.group},
                   {"meaning", c.meaning}, {"empty_when", c.empty_when}});
  }
  return out;
}

std::string schema_markdown() {
  std::ostringstream out;
  out << "| column | group | unit | meaning | empty when |\n|---|---|---|---|---|\n";
  std::string params;
  for (const Column& c : columns()) {
    if (c.group != "param") continue;
    params += (params.empty() ? "`" : ", `") + c.name + "`";
  }
  bool params_written = false;
  for (const Column& c : columns()) {
    if (c.group == "param") {
      if (!params_written) {
        out << "| " << params << " | param | | one column per parameter (`schedlab list` describes "
            << "each; a size is in bytes) | the parameter does not apply to the row's scheduler "
            << "and workload |\n";
        params_written = true;
      }
      continue;
    }
    out << "| `" << c.name << "` | " << c.group << " | " << c.unit << " | " << c.meaning << " | "
        << c.empty_when << " |\n";
  }
  return out.str();
}

}  // namespace schedlab
