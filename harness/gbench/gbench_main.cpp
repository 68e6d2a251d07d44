// schedlab_gbench: every registered scheduler x every workload x thread counts, as Google
// Benchmark benchmarks, for the Google Benchmark tool chain (JSON/CSV output, compare.py,
// --benchmark_filter, --benchmark_repetitions).
//
//   schedlab_gbench [--schedlab_param NAME=VALUE ...] [--schedlab_threads 1,2,...] [--benchmark_...]
//
// Names: sched:steal-half/work:fib-go/threads:2 (Google Benchmark 1.7.1 appends
// /process_time/manual_time because of MeasureProcessCPUTime and UseManualTime). Each iteration
// is one repetition of `schedlab run`'s measurement protocol (harness/measure.hpp): the
// iteration's time is the measured region (Scheduler::run of the workload's root task), and
// the result check and the exactly-once check follow every iteration outside it. The scheduler
// and workload are built, and the workload prepared, once per benchmark outside the timed loop
// (kept across Google Benchmark's calls that size the iteration count, rebuilt when another
// benchmark runs); a wrong result, a task count other than the workload's own, or an error from
// the scheduler (e.g. os-threads' live-thread limit) is reported with SkipWithError.
//
// Parameters: every scheduler and workload runs with its registry defaults, except that the
// fib shapes and the field's trees run smaller (each workload entry's gbench_defaults,
// registry.hpp: fib-go n=20, fib n=22, skynet 10^4, nqueens 8, uts mini-T1), so that a whole
// sweep stays quick and fits under os-threads' default max-live-threads. Override any parameter with
// `--schedlab_param NAME=VALUE` (repeatable; also `--schedlab_param=NAME=VALUE`) or with the
// environment variable SCHEDLAB_PARAMS="NAME=VALUE NAME=VALUE" (flags win). A parameter applies
// to every scheduler and workload that declares it, as with `schedlab run --NAME`. Thread counts
// default to 1, 2, 4, ... below the usable CPUs plus that count (auto_thread_counts); serial
// runs only at 1; `--schedlab_threads 1,2` replaces the list. Scheduler entries without a `make`
// (external programs such as a Go runtime twin) are skipped.
//
// Reference programs: raw:tbb-task-group/work:fib-go/threads:N (and work:fib) run fib written
// straight against oneTBB's task_group (raw_tbb.cpp), raw:openmp-task/... the same with OpenMP's
// `omp task` and `taskwait` (raw_openmp.cpp, GCC's libgomp), with the fib workloads' n and
// cutoff, the result checked, and tasks and ns_per_task counted the same way (root included):
// the rows the `tbb` and `openmp` adapters, and the fiber schedulers' targets, are compared
// with. Pair them with --benchmark_enable_random_interleaving=true --benchmark_repetitions=15.
//
// User counters, per iteration (kAvgIterations) unless noted: tasks, steals, tasks_stolen,
// migrations, global_pushes, global_pops, parks; ns_per_task (summed Scheduler::run time over
// summed tasks, not averaged); peak_live_tasks (a gauge: the scheduler's value after the loop).
// A counter the scheduler does not measure (tbb's steals, os-threads' parks) is left out of the
// row, never written as 0: in JSON the key is absent, in CSV the cell is empty. Google
// Benchmark's CSV reporter takes its header from the first benchmark it reports and aborts
// ("All counters must be present in each run") when a later one has a counter the first lacked
// (a filter whose first benchmark is tbb); CompleteHeaderCsv gives it every counter's column
// from the start (user_counter_names). Times are in microseconds: the runs last from tens of
// microseconds to milliseconds, and compare.py prints times as whole numbers of the unit.
//
// Debian's libbenchmark 1.7.1 is a DEBUG build and prints "***WARNING*** Library was built as
// DEBUG. Timings may be affected." on every run (docs/platform.md). The library's own code is
// only the timing loop around each iteration, which here lasts milliseconds, so the effect on
// these rows is negligible; the JSON context records it as schedlab_note.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "build_info.hpp"
#include "fib/fib.hpp"
#include "measure.hpp"
#include "plan.hpp"
#include "registry.hpp"
#if SCHEDLAB_WITH_TBB
#include "raw_tbb.hpp"
#endif
#if SCHEDLAB_WITH_OPENMP
#include "raw_openmp.hpp"
#endif

namespace schedlab {
namespace {

struct Options {
  std::map<std::string, std::string> params;  // NAME -> VALUE, as given
  std::vector<unsigned> threads;
  std::string filter;  // --benchmark_filter, as given (empty: every benchmark)
};

// Whether Google Benchmark's --benchmark_filter keeps the benchmark registered as `name`: its
// rule (1.7: "all" or "." keeps all, a leading '-' excludes what the rest matches, else the
// regular expression is searched in the name, which the library suffixes with
// /process_time/manual_time here). Parameters are validated only for the benchmarks the filter
// keeps: `--benchmark_filter=fib-go --schedlab_param n=25` must not be refused because n=25 is
// out of range for nqueens, which the filter drops. A filter this cannot read keeps everything
// (the library then says what is wrong with it).
bool kept(const Options& o, const std::string& name) {
  if (o.filter.empty() || o.filter == "all" || o.filter == ".") return true;
  const bool negative = o.filter[0] == '-';
  try {
    const std::regex re(negative ? o.filter.substr(1) : o.filter, std::regex::extended);
    return std::regex_search(name + "/process_time/manual_time", re) != negative;
  } catch (const std::regex_error&) {
    return true;
  }
}

[[noreturn]] void refuse(const std::string& message) {
  std::fprintf(stderr, "schedlab_gbench: %s\n", message.c_str());
  std::exit(2);
}

void add_param(Options& o, const std::string& text, const char* from) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    refuse(std::string(from) + " '" + text + "': expected NAME=VALUE, e.g. n=20");
  }
  o.params[text.substr(0, eq)] = text.substr(eq + 1);
}

// The same counts and words as `schedlab run --threads` (plan.hpp's thread_counts).
std::vector<unsigned> parse_threads(const std::string& text) {
  std::vector<unsigned> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    try {
      for (unsigned t : thread_counts(item)) out.push_back(t);
    } catch (const ParamError& e) {
      refuse(std::string("--schedlab_threads: ") + e.what());
    }
  }
  if (out.empty()) refuse("--schedlab_threads is empty");
  return out;
}

// Takes schedlab's own flags out of argv (Google Benchmark refuses flags it does not know).
Options parse_own_flags(int& argc, char** argv) {
  Options o;
  if (const char* env = std::getenv("SCHEDLAB_PARAMS")) {
    std::stringstream in(env);
    std::string item;
    while (in >> item) {
      std::stringstream parts(item);
      std::string p;
      while (std::getline(parts, p, ',')) {
        if (!p.empty()) add_param(o, p, "SCHEDLAB_PARAMS entry");
      }
    }
  }
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value_of = [&](const std::string& flag) -> std::optional<std::string> {
      if (a == flag) {
        if (i + 1 >= argc) refuse(flag + " needs a value");
        return std::string(argv[++i]);
      }
      if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
      return std::nullopt;
    };
    if (auto v = value_of("--schedlab_param")) {
      add_param(o, *v, "--schedlab_param");
    } else if (auto t = value_of("--schedlab_threads")) {
      o.threads = parse_threads(*t);
    } else if (a == "--schedlab_help") {
      std::printf(
          "schedlab_gbench: Google Benchmark over every scheduler x workload x thread count\n"
          "  --schedlab_param NAME=VALUE   set a scheduler or workload parameter (repeatable;\n"
          "                                env SCHEDLAB_PARAMS=\"NAME=VALUE ...\" too)\n"
          "  --schedlab_threads 1,2,4      thread counts, or auto (the default: 1, 2, 4, ... and the CPU count)\n"
          "  --benchmark_...               Google Benchmark's flags (--help lists them)\n"
          "Parameters: see `schedlab list`.\n");
      std::exit(0);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = nullptr;
  if (o.threads.empty()) o.threads = auto_thread_counts();
  return o;
}

// The values of `given` that `specs` declares, over `defaults` (a workload's gbench_defaults).
ParamValues params_for(const std::vector<ParamSpec>& specs, const Options& o, const ParamValues& defaults,
                       const std::string& owner) {
  ParamValues p = defaults;
  for (const ParamSpec& s : specs) {
    if (auto it = o.params.find(s.name); it != o.params.end()) p[s.name] = it->second;
  }
  return resolve_params(specs, p, owner);
}

// The subject (scheduler) and prepared workload of the benchmark that ran last. Google
// Benchmark calls a benchmark's function several times (to size the iteration count, then per
// repetition); they share one instance. Only one is alive at a time: the next benchmark
// releases it.
struct Live {
  std::string name;
  std::unique_ptr<InProcessSubject> subject;
  std::unique_ptr<Workload> work;
};
std::unique_ptr<Live> g_live;

void release_live() {
  if (!g_live) return;
  if (g_live->work) g_live->work->cleanup();
  g_live.reset();
}

struct Spec {
  std::string name;
  const SchedulerEntry* sched;
  ParamValues sched_params;
  const WorkloadEntry* work;
  ParamValues work_params;
  unsigned threads;
};

Live& acquire_live(const Spec& spec) {
  if (g_live && g_live->name == spec.name) return *g_live;
  release_live();
  auto l = std::make_unique<Live>();
  l->name = spec.name;
  l->work = spec.work->make(spec.work_params);
  l->subject = in_process_subject(*spec.sched, spec.threads, spec.sched_params, spec.name, Watchers{});
  l->work->prepare();
  g_live = std::move(l);
  return *g_live;
}

// The scheduler counters reported per iteration, and the gauge reported as is.
constexpr Counter kPerIteration[] = {Counter::steals,        Counter::tasks_stolen, Counter::migrations,
                                     Counter::global_pushes, Counter::global_pops,  Counter::parks};
constexpr Counter kGauge = Counter::peak_live_tasks;

// Every user counter a benchmark may report (report_counters), by name.
std::vector<std::string> user_counter_names() {
  std::vector<std::string> names{"tasks", "ns_per_task", std::string(counter_name(kGauge))};
  for (Counter c : kPerIteration) names.emplace_back(counter_name(c));
  return names;
}

// The user counters of a benchmark from its runs' summed counters; only those measured.
void report_counters(benchmark::State& state, const CounterSet& total, double run_ns, double tasks) {
  if (tasks >= 0) {
    state.counters["tasks"] = benchmark::Counter(tasks, benchmark::Counter::kAvgIterations);
    if (tasks > 0) state.counters["ns_per_task"] = benchmark::Counter(run_ns / tasks);
  }
  for (Counter c : kPerIteration) {
    if (!total.has(c)) continue;
    state.counters[std::string(counter_name(c))] =
        benchmark::Counter(static_cast<double>(total[c]), benchmark::Counter::kAvgIterations);
  }
  if (total.has(kGauge)) {
    state.counters[std::string(counter_name(kGauge))] = benchmark::Counter(static_cast<double>(total[kGauge]));
  }
}

// Google Benchmark's CSV reporter with a header that has every user counter's column, whichever
// benchmark comes first (see the top of this file); a counter a run lacks is an empty cell (the
// library's own rule for a name in the header that the run does not have). The header is the
// library's own: it is written by a first report of a copy of the first run carrying every
// counter, into a scratch stream whose first line is kept (the copy's row is dropped).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // 1.7.1 marks CSVReporter deprecated
class CompleteHeaderCsv : public benchmark::CSVReporter {
 public:
  void ReportRuns(const std::vector<Run>& reports) override {
    if (!header_written_ && !reports.empty()) {
      Run probe = reports.front();
      for (const std::string& name : user_counter_names()) probe.counters.emplace(name, benchmark::Counter(0));
      std::ostream& real = GetOutputStream();
      std::ostringstream scratch;
      SetOutputStream(&scratch);
      CSVReporter::ReportRuns({probe});
      SetOutputStream(&real);
      const std::string text = scratch.str();
      real << text.substr(0, text.find('\n') + 1);
      header_written_ = true;
    }
    CSVReporter::ReportRuns(reports);
  }

 private:
  bool header_written_ = false;
};
#pragma GCC diagnostic pop

// The value of a Google Benchmark flag, given as --NAME=VALUE (its only form; the last wins, as
// in the library), or nullopt.
std::optional<std::string> flag_value(int argc, char** argv, const std::string& flag) {
  std::optional<std::string> value;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--" + flag + "=", 0) == 0) value = a.substr(flag.size() + 3);
  }
  return value;
}

// Each iteration is one measured repetition of `schedlab run` (measure.hpp): the same timed
// region (reported as the iteration's manual time), the same result check and exactly-once
// check, which fail the benchmark with SkipWithError.
void run_benchmark(benchmark::State& state, const Spec& spec) {
  Live* live = nullptr;
  try {
    live = &acquire_live(spec);
  } catch (const std::exception& e) {
    release_live();
    state.SkipWithError(("setup failed: " + std::string(e.what())).c_str());
    for (auto _ : state) {
    }
    return;
  }
  CounterSet total;
  double run_ns = 0, tasks = 0;
  bool tasks_known = true;
  for (auto _ : state) {
    Measurement m;
    try {
      m = live->subject->measure(*live->work, /*traced=*/false);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
    state.SetIterationTime(m.wall_ns / 1e9);
    run_ns += m.wall_ns;
    total += m.counters;
    if (m.tasks) {
      tasks += static_cast<double>(*m.tasks);
    } else {
      tasks_known = false;
    }
  }
  if (state.error_occurred()) {
    release_live();  // a failed run may leave the workload's state anywhere
    return;
  }
  report_counters(state, total, run_ns, tasks_known ? tasks : -1);
}

// Keeps the specs alive for the registered lambdas.
std::vector<std::unique_ptr<Spec>> g_specs;

#if SCHEDLAB_WITH_TBB || SCHEDLAB_WITH_OPENMP
// The references: fib written straight against a library (raw_tbb.hpp, raw_openmp.hpp), with
// the fib workload's parameters, checked and counted like the others.
struct RawSpec {
  std::string name;
  FibShape shape;
  int n, cutoff, base;  // base: the go shape's base case (fib.hpp)
  unsigned threads;
};
std::vector<std::unique_ptr<RawSpec>> g_raw_specs;

// One reference: `fib(shape, n, cutoff, base)` runs one whole fib under the library, set up by
// the caller for spec.threads threads.
template <class Fib>
void run_raw(benchmark::State& state, const RawSpec& spec, Fib fib) {
  const std::uint64_t want = fib_reference(spec.n);
  const double tasks = static_cast<double>(fib_tasks(spec.shape, spec.n, spec.cutoff, spec.base) + 1);  // root too
  double run_ns = 0, iterations = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t got = fib(spec.shape, spec.n, spec.cutoff, spec.base);
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(ns / 1e9);
    if (got != want) {
      state.SkipWithError(("wrong result: fib(" + std::to_string(spec.n) + ") = " + std::to_string(got)).c_str());
      break;
    }
    run_ns += ns;
    ++iterations;
  }
  if (state.error_occurred() || iterations == 0) return;
  report_counters(state, CounterSet{}, run_ns, tasks * iterations);  // no scheduler counters here
}

#if SCHEDLAB_WITH_TBB
void run_raw_tbb(benchmark::State& state, const RawSpec& spec) {
  release_live();  // one oneTBB arena limit at a time (tbb.cpp's ParallelismLimit)
  RawTbbFib tbb(spec.threads);
  run_raw(state, spec, [&tbb](FibShape shape, int n, int cutoff, int base) {
    return shape == FibShape::go ? tbb.fib_go(n, cutoff, base) : tbb.fib_cilk(n, cutoff);
  });
}
#endif

#if SCHEDLAB_WITH_OPENMP
void run_raw_openmp(benchmark::State& state, const RawSpec& spec) {
  release_live();  // no other scheduler's threads (an `openmp` team spinning after its region)
  run_raw(state, spec, [threads = spec.threads](FibShape shape, int n, int cutoff, int base) {
    return raw_openmp_fib(threads, shape, n, cutoff, base);
  });
}
#endif

// Registers `library`'s reference for both fib shapes at every thread count.
void register_raw(const Options& o, const std::string& library, void (*run)(benchmark::State&, const RawSpec&)) {
  for (const auto& [workload, shape] : {std::pair{"fib-go", FibShape::go}, std::pair{"fib", FibShape::cilk}}) {
    const WorkloadEntry& w = find_workload(workload);
    const auto name = [&](unsigned t) { return "raw:" + library + "/work:" + w.name + "/threads:" + std::to_string(t); };
    if (std::none_of(o.threads.begin(), o.threads.end(), [&](unsigned t) { return kept(o, name(t)); })) continue;
    const ParamValues wp = params_for(w.params, o, w.gbench_defaults, "workload " + w.name);
    for (unsigned t : o.threads) {
      if (!kept(o, name(t))) continue;
      auto spec = std::make_unique<RawSpec>(RawSpec{
          name(t), shape,
          static_cast<int>(param_int(wp, "n")), static_cast<int>(param_int(wp, "cutoff")),
          wp.count("base") != 0 ? static_cast<int>(param_int(wp, "base")) : kFibSeedBase, t});
      const RawSpec* raw = spec.get();
      g_raw_specs.push_back(std::move(spec));
      benchmark::RegisterBenchmark(raw->name.c_str(), [raw, run](benchmark::State& st) { run(st, *raw); })
          ->UseManualTime()
          ->MeasureProcessCPUTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}
#endif

void register_all(const Options& o) {
  // Every given parameter must mean something to some scheduler or workload.
  std::set<std::string> known;
  for (const auto& s : scheduler_registry())
    for (const auto& p : s.params) known.insert(p.name);
  for (const auto& w : workload_registry())
    for (const auto& p : w.params) known.insert(p.name);
  for (const auto& [name, value] : o.params) {
    if (!known.count(name)) refuse("parameter '" + name + "' is declared by no scheduler or workload; see `schedlab list`");
  }

  const auto name = [](const SchedulerEntry& s, const WorkloadEntry& w, unsigned t) {
    return "sched:" + s.name + "/work:" + w.name + "/threads:" + std::to_string(t);
  };
  const auto runs = [](const SchedulerEntry& s, unsigned t) { return !s.external() && (!s.single_threaded || t == 1); };
  std::set<const SchedulerEntry*> used;
  for (const WorkloadEntry& w : workload_registry()) {
    bool any = false;
    for (const SchedulerEntry& s : scheduler_registry())
      for (unsigned t : o.threads) any = any || (runs(s, t) && kept(o, name(s, w, t)));
    if (!any) continue;  // the filter drops this workload: its parameters are not checked
    const ParamValues wp = params_for(w.params, o, w.gbench_defaults, "workload " + w.name);
    benchmark::AddCustomContext("schedlab_params:work:" + w.name, describe(w.params, wp));
    for (const SchedulerEntry& s : scheduler_registry()) {
      std::optional<ParamValues> sp;  // resolved when the filter keeps one of its benchmarks
      for (unsigned t : o.threads) {
        if (!runs(s, t) || !kept(o, name(s, w, t))) continue;
        if (!sp) sp = params_for(s.params, o, {}, "scheduler " + s.name);
        used.insert(&s);
        auto spec = std::make_unique<Spec>(Spec{name(s, w, t), &s, *sp, &w, wp, t});
        const Spec* raw = spec.get();
        g_specs.push_back(std::move(spec));
        benchmark::RegisterBenchmark(raw->name.c_str(),
                                     [raw](benchmark::State& st) { run_benchmark(st, *raw); })
            ->UseManualTime()
            ->MeasureProcessCPUTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
#if SCHEDLAB_WITH_TBB
  register_raw(o, "tbb-task-group", &run_raw_tbb);
#endif
#if SCHEDLAB_WITH_OPENMP
  register_raw(o, "openmp-task", &run_raw_openmp);
#endif
  for (const SchedulerEntry& s : scheduler_registry()) {
    if (!used.count(&s) || s.params.empty()) continue;
    benchmark::AddCustomContext("schedlab_params:sched:" + s.name,
                                describe(s.params, params_for(s.params, o, {}, "scheduler " + s.name)));
  }
}

}  // namespace
}  // namespace schedlab

int main(int argc, char** argv) {
  using namespace schedlab;
  Options options;
  try {
    options = parse_own_flags(argc, argv);
    options.filter = flag_value(argc, argv, "benchmark_filter").value_or("");
    register_all(options);
  } catch (const std::exception& e) {
    refuse(e.what());
  }
  benchmark::AddCustomContext("schedlab_commit", std::string(SCHEDLAB_GIT_COMMIT) +
                                                     (SCHEDLAB_GIT_DIRTY ? " (dirty tree)" : ""));
  benchmark::AddCustomContext(
      "schedlab_note",
      "Debian's libbenchmark 1.7.1 is a DEBUG build (its warning is expected); each iteration "
      "is one Scheduler::run of the workload");
  // Read before Initialize, which takes the flags out of argv.
  const bool csv_display = flag_value(argc, argv, "benchmark_format") == "csv";
  const bool csv_file = flag_value(argc, argv, "benchmark_out_format") == "csv" &&
                        !flag_value(argc, argv, "benchmark_out").value_or("").empty();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::unique_ptr<benchmark::BenchmarkReporter> display(csv_display ? new CompleteHeaderCsv
                                                                    : benchmark::CreateDefaultDisplayReporter());
  std::unique_ptr<CompleteHeaderCsv> file(csv_file ? new CompleteHeaderCsv : nullptr);
  benchmark::RunSpecifiedBenchmarks(display.get(), file.get());
  release_live();
  benchmark::Shutdown();
  return 0;
}
