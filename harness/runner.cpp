#include "runner.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <memory>
#include <set>
#include <sstream>

#include "chrome_trace.hpp"
#include "csv.hpp"
#include "go_reference.hpp"
#include "hw_counters.hpp"
#include "metadata.hpp"
#include "diagnostics.hpp"
#include "schedtrace.hpp"

namespace schedlab {

std::atomic<bool> g_stop_requested{false};

namespace {

// Every combination of the values given for `specs` (defaults for those not given).
std::vector<ParamValues> combinations(const std::vector<ParamSpec>& specs,
                                      const std::map<std::string, std::vector<std::string>>& given,
                                      const std::string& owner) {
  std::vector<ParamValues> out{ParamValues{}};
  for (const ParamSpec& s : specs) {
    auto it = given.find(s.name);
    if (it == given.end()) continue;
    std::vector<ParamValues> next;
    for (const ParamValues& partial : out) {
      for (const std::string& v : it->second) {
        ParamValues p = partial;
        p[s.name] = v;
        next.push_back(std::move(p));
      }
    }
    out = std::move(next);
  }
  for (ParamValues& p : out) p = resolve_params(specs, p, owner);
  return out;
}

// Only the values this spec list declares.
std::map<std::string, std::vector<std::string>> restrict_to(
    const std::vector<ParamSpec>& specs, const std::map<std::string, std::vector<std::string>>& all) {
  std::map<std::string, std::vector<std::string>> out;
  for (const ParamSpec& s : specs) {
    auto it = all.find(s.name);
    if (it != all.end()) out[s.name] = it->second;
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string format_double(double v, int precision) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

}  // namespace

std::vector<std::string> csv_columns() {
  std::vector<std::string> cols = {"run_id",          "preset",          "scheduler",
                                   "workload",        "threads",         "rep",
                                   "scheduler_params", "workload_params"};
  for (const ParamSpec& s : all_param_specs()) cols.push_back(s.column());
  for (const char* c : {"wall_ns", "tasks", "ns_per_task", "cpu_ns"}) cols.emplace_back(c);
  for (std::string_view c : kCounterNames) cols.emplace_back(c);
  for (const char* c : {"ru_nvcsw", "ru_nivcsw"}) cols.emplace_back(c);
  for (const HwEvent& e : hw_events()) cols.push_back(e.column);
  return cols;
}

namespace {

class ProgressLine {
 public:
  ProgressLine(bool enabled, std::size_t total) : enabled_(enabled), total_(total) {}
  void update(std::size_t done, const std::string& what) {
    if (!enabled_) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string eta = "?";
    if (done > 0) eta = format_double(elapsed / static_cast<double>(done) * static_cast<double>(total_ - done), 0) + "s";
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s  elapsed %.0fs  eta %s", done + 1, total_,
                 what.c_str(), elapsed, eta.c_str());
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

}  // namespace

std::string Case::label() const {
  return scheduler->name + " " + workload->name + "(" + describe(workload->params, workload_params) +
         ") threads=" + std::to_string(threads);
}

namespace {

// go-runtime rows need the Go toolchain and a Go twin of the workload; without either they are
// skipped, with one message per reason (a machine without Go still runs everything else).
bool external_runnable(const SchedulerEntry& s, const WorkloadEntry& w) {
  static std::set<std::string> said;
  auto skip = [&](const std::string& why) {
    if (said.insert(why).second) std::fprintf(stderr, "schedlab: skipping %s rows: %s\n", s.name.c_str(), why.c_str());
    return false;
  };
  if (const auto why = go_reference_unavailable()) return skip(*why);
  if (!go_supports_workload(w.name)) return skip("no Go twin of workload " + w.name);
  return true;
}

std::vector<Case> plan_part(const RunPart& r) {
  if (r.schedulers.empty()) throw ParamError("no scheduler given; use --scheduler NAME[,NAME...]");
  if (r.workloads.empty()) throw ParamError("no workload given; use --workload NAME[,NAME...]");
  if (r.threads.empty()) throw ParamError("no thread count given; use --threads N[,N...]");
  for (unsigned t : r.threads) {
    if (t < 1 || t > kMaxThreads) {
      throw ParamError("--threads " + std::to_string(t) + ": out of range; use 1.." +
                       std::to_string(kMaxThreads));
    }
  }

  std::vector<const SchedulerEntry*> scheds;
  for (const auto& name : r.schedulers) scheds.push_back(&find_scheduler(name));
  std::vector<const WorkloadEntry*> works;
  for (const auto& name : r.workloads) works.push_back(&find_workload(name));

  // A parameter must mean something to at least one selected scheduler or workload.
  for (const auto& [name, values] : r.params) {
    bool used = false;
    for (auto* s : scheds)
      for (const auto& p : s->params) used = used || p.name == name;
    for (auto* w : works)
      for (const auto& p : w->params) used = used || p.name == name;
    if (!used) {
      throw ParamError("--" + name + " does not apply to the selected schedulers or workloads; see `schedlab list`");
    }
    if (values.empty()) throw ParamError("--" + name + " has no value");
  }

  std::vector<Case> cases;
  for (const WorkloadEntry* w : works) {
    for (const ParamValues& wp : combinations(w->params, restrict_to(w->params, r.params), "workload " + w->name)) {
      // Build once to validate the combination (e.g. n in range for this shape).
      try {
        (void)w->make(wp);
      } catch (const std::invalid_argument& e) {
        throw ParamError(e.what());
      }
      for (unsigned t : r.threads) {
        for (const SchedulerEntry* s : scheds) {
          if (s->single_threaded && t != r.threads.front()) continue;
          if (s->external && !external_runnable(*s, *w)) continue;
          for (const ParamValues& sp : combinations(s->params, restrict_to(s->params, r.params), "scheduler " + s->name)) {
            cases.push_back(Case{s, sp, w, wp, s->single_threaded ? 1u : t});
          }
        }
      }
    }
  }
  return cases;
}

}  // namespace

std::vector<Case> plan(const RunRequest& r) {
  if (r.reps < 1 || r.reps > 100000) throw ParamError("--reps " + std::to_string(r.reps) + ": out of range; use 1..100000");
  if (r.warmup > 1000) throw ParamError("--warmup " + std::to_string(r.warmup) + ": out of range; use 0..1000");
  if (r.parts.empty()) throw ParamError("nothing to run; give --scheduler and --workload, or --preset");
  std::vector<Case> cases;
  for (const RunPart& part : r.parts) {
    std::vector<Case> more = plan_part(part);
    cases.insert(cases.end(), more.begin(), more.end());
  }
  return cases;
}

namespace {

// What one repetition measured.
struct Measurement {
  double wall_ns = 0;
  CounterSet counters;                // measured bits clear for an external program
  std::optional<double> cpu_ns;       // process user + system time during the run
  std::optional<long> nvcsw, nivcsw;  // getrusage context switches during the run
  std::vector<std::pair<std::string, std::optional<long long>>> hw;
};

struct Usage {
  double cpu_ns;
  long nvcsw, nivcsw;
};
Usage process_usage() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_usec) * 1e3; };
  return {ns(u.ru_utime) + ns(u.ru_stime), u.ru_nvcsw, u.ru_nivcsw};
}

}  // namespace

RunOutcome execute(const RunRequest& r, const std::vector<Case>& cases, CsvWriter& csv, HwCounters& hw) {
  RunOutcome outcome;
  const std::vector<ParamSpec> specs = all_param_specs();
  MetadataFile meta(metadata_path_for(r.out_path));
  const std::string run_id = compact_timestamp() + "-" + host_name() + "-" + std::to_string(::getpid());
  meta.data()["run_id"] = run_id;
  meta.data()["csv"] = r.out_path;
  meta.data()["preset"] = r.preset;
  meta.data()["command_line"] = r.command_line;
  meta.data()["started_utc"] = utc_timestamp();
  meta.data()["machine"] = machine_info();
  meta.data()["reps"] = r.reps;
  meta.data()["warmup_runs"] = r.warmup;
  meta.data()["counters"] = counter_metadata(hw);
  meta.data()["status"] = "running";
  meta.data()["notes"] = nlohmann::json::array(
      {"peak_live_tasks is exact with one worker thread and exact to within 32 tasks per additional "
       "worker (batched gauge)",
       "wall_ns covers Scheduler::run of the workload's root task; warm-up runs are not recorded",
       "cpu_ns, ru_nvcsw and ru_nivcsw are getrusage(RUSAGE_SELF) differences: the whole process",
       "go-runtime rows: wall_ns and tasks as reported by the Go program for its measured region; "
       "other columns are not measured for them"});
  meta.save();

  ProgressLine progress(r.progress, cases.size() * r.reps);
  SchedTracer tracer(r.schedtrace_ms);
  std::unique_ptr<ChromeTrace> timeline;
  if (!r.trace_path.empty()) timeline = std::make_unique<ChromeTrace>(r.trace_path, r.trace_max_events);
  std::size_t done = 0;
  auto finish = [&](RunStatus status, const std::string& error) {
    set_overflow_report("", "");
    outcome.status = status;
    outcome.error = error;
    outcome.rows = csv.rows();
    meta.data()["status"] = status == RunStatus::complete ? "complete"
                            : status == RunStatus::failed ? "failed"
                                                          : "interrupted";
    if (!error.empty()) meta.data()["error"] = error;
    meta.data()["rows"] = csv.rows();
    meta.data()["counters"] = counter_metadata(hw);
    meta.data()["finished_utc"] = utc_timestamp();
    meta.save();
    return outcome;
  };

  // Cases that share a workload and its parameters form a group. A group's schedulers are all
  // built, prepared and warmed up first; then repetition i of every case runs before
  // repetition i+1 of any, so a slow phase of a noisy machine falls on all of them alike and
  // the ratios between schedulers stay meaningful.
  for (std::size_t first = 0; first < cases.size();) {
    std::size_t last = first;
    while (last < cases.size() && cases[last].workload == cases[first].workload &&
           cases[last].workload_params == cases[first].workload_params) {
      ++last;
    }
    struct Live {
      const Case* c;
      std::unique_ptr<Scheduler> sched;  // nullptr for an external program
      CaseResult result;
    };
    std::vector<Live> group;
    std::unique_ptr<Workload> workload;
    try {
      workload = cases[first].workload->make(cases[first].workload_params);
      workload->prepare();
      const std::optional<std::uint64_t> expected = workload->expected_tasks();

      auto run_external = [&](const Case& c, unsigned warmup) {
        std::vector<std::pair<std::string, std::string>> args;
        for (const ParamSpec& p : c.workload->params) args.emplace_back(p.name, c.workload_params.at(p.name));
        for (auto& extra : workload->external_args()) args.push_back(std::move(extra));
        const std::vector<GoRun> runs =
            run_go_reference(c.workload->name, args, c.threads, warmup, 1, r.schedtrace_ms);
        Measurement m;
        m.wall_ns = runs.at(0).wall_ns;
        m.counters.set(Counter::tasks_executed, static_cast<std::uint64_t>(runs.at(0).tasks));
        return m;
      };
      auto run_once = [&](Live& l, unsigned external_warmup, bool traced = false) -> Measurement {
        const Case& c = *l.c;
        Measurement m;
        if (l.sched == nullptr) {
          m = run_external(c, external_warmup);
        } else {
          set_overflow_context(c.label().c_str());
          // A stack overflow ends the process from the signal handler: it leaves this sidecar,
          // not one that says "running".
          nlohmann::json crashed = meta.data();
          crashed["status"] = "failed";
          crashed["error"] = "stack overflow in a task of " + c.label() +
                             " (the process exited); rerun with a larger --stack-size";
          crashed["rows"] = csv.rows();
          set_overflow_report(meta.path(), crashed.dump(2) + "\n");
          tracer.watch(l.sched.get(), c.scheduler->name);
          const CounterSet before = l.sched->counters();
          const Usage u0 = process_usage();
          if (traced && timeline && !l.sched->trace_next_run(timeline->budget())) {
            timeline->add_run(c.label(), {}, 0, "not traced: this backend does not expose its worker threads");
            traced = false;
          }
          traced = traced && timeline != nullptr;
          hw.start(l.sched->worker_tids());
          const auto t0 = std::chrono::steady_clock::now();
          try {
            l.sched->run([&] { workload->run(); });
          } catch (...) {
            (void)hw.stop();
            tracer.watch(nullptr, "");
            throw;
          }
          const auto t1 = std::chrono::steady_clock::now();
          m.hw = hw.stop();
          if (traced) {
            timeline->add_run(c.label(), l.sched->take_trace(),
                              static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                             t0.time_since_epoch()).count()));
          }
          const Usage u1 = process_usage();
          tracer.watch(nullptr, "");
          m.counters = l.sched->counters() - before;
#if !SCHEDLAB_STATS
          // The build without counters (it measures what they cost): nothing was counted, so
          // nothing may be written as a number.
          m.counters.measured.reset();
#endif
          m.wall_ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
          m.cpu_ns = u1.cpu_ns - u0.cpu_ns;
          m.nvcsw = u1.nvcsw - u0.nvcsw;
          m.nivcsw = u1.nivcsw - u0.nivcsw;
        }
        if (std::string err = l.sched == nullptr ? std::string() : workload->check(); !err.empty()) {
          throw std::runtime_error("wrong result: " + c.label() + ": " + err);
        }
        // Exactly-once, checked on every run where both sides are known.
        if (expected && m.counters.has(Counter::tasks_executed) &&
            m.counters[Counter::tasks_executed] != *expected + 1) {
          throw std::runtime_error("task count mismatch: " + c.label() + ": executed " +
                                   std::to_string(m.counters[Counter::tasks_executed]) +
                                   " tasks, expected " + std::to_string(*expected + 1) +
                                   " (a task was lost or ran twice)");
        }
        return m;
      };
      for (std::size_t k = first; k < last; ++k) {
        const Case& c = cases[k];
        Live l{&c, c.scheduler->external ? nullptr : c.scheduler->make(c.threads, c.scheduler_params),
               CaseResult{c, {}, 0}};
        // An external program warms up inside each of its runs (a new process each time).
        if (l.sched != nullptr) {
          for (unsigned i = 0; i < r.warmup; ++i) run_once(l, 0);
        }
        group.push_back(std::move(l));
      }
      for (unsigned rep = 0; rep < r.reps; ++rep) {
        for (Live& l : group) {
          if (g_stop_requested.load()) {
            workload->cleanup();
            for (Live& g : group) outcome.results.push_back(std::move(g.result));
            return finish(RunStatus::interrupted, "");
          }
          const Case& c = *l.c;
          progress.update(done, c.label() + " rep " + std::to_string(rep + 1) + "/" + std::to_string(r.reps));
          const Measurement m = run_once(l, r.warmup, rep == 0);
          const CounterSet& counters = m.counters;
          const double tasks = counters.has(Counter::tasks_executed)
                                   ? static_cast<double>(counters[Counter::tasks_executed])
                                   : expected ? static_cast<double>(*expected + 1) : NAN;
          std::vector<std::string> row = {run_id,
                                          r.preset,
                                          c.scheduler->name,
                                          c.workload->name,
                                          std::to_string(c.threads),
                                          std::to_string(rep),
                                          describe(c.scheduler->params, c.scheduler_params),
                                          describe(c.workload->params, c.workload_params)};
          for (const ParamSpec& s : specs) {
            auto w = c.workload_params.find(s.name);
            auto p = c.scheduler_params.find(s.name);
            row.push_back(w != c.workload_params.end()    ? w->second
                          : p != c.scheduler_params.end() ? p->second
                                                           : "");
          }
          row.push_back(format_double(m.wall_ns, 0));
          row.push_back(std::isnan(tasks) ? "" : format_double(tasks, 0));
          row.push_back(std::isnan(tasks) ? "" : format_double(m.wall_ns / tasks, 2));
          row.push_back(m.cpu_ns ? format_double(*m.cpu_ns, 0) : "");
          // A scheduler's own counters are meaningful for the in-process schedulers only; for
          // an external program, tasks_executed above is the program's own report.
          for (std::size_t k = 0; k < kCounterCount; ++k) {
            const bool shown = counters.measured[k] && l.sched != nullptr;
            row.push_back(shown ? std::to_string(counters.value[k]) : "");
          }
          row.push_back(m.nvcsw ? std::to_string(*m.nvcsw) : "");
          row.push_back(m.nivcsw ? std::to_string(*m.nivcsw) : "");
          for (const HwEvent& e : hw_events()) {
            std::string cell;
            for (const auto& [column, value] : m.hw) {
              if (column == e.column && value) cell = std::to_string(*value);
            }
            row.push_back(cell);
          }
          csv.write_row(row);
          l.result.wall_ns.push_back(m.wall_ns);
          l.result.tasks = tasks;
          ++done;
        }
      }
      workload->cleanup();
    } catch (const std::exception& e) {
      if (workload) workload->cleanup();
      for (Live& g : group) outcome.results.push_back(std::move(g.result));
      return finish(RunStatus::failed, e.what());
    }
    for (Live& g : group) outcome.results.push_back(std::move(g.result));
    first = last;
  }
  if (timeline) {
    timeline->write();
    std::fprintf(stderr, "schedlab: trace written to %s%s\n", r.trace_path.c_str(),
                 timeline->dropped() == 0 ? ""
                                          : (" (cap reached: " + std::to_string(timeline->dropped()) +
                                             " events dropped; raise --trace-max-events or trace fewer cases)").c_str());
  }
  return finish(RunStatus::complete, "");
}

namespace {
// "steal-half handoff=off": the name plus the parameters that differ from their defaults.
std::string scheduler_label(const Case& c) {
  std::string label = c.scheduler->name;
  for (const ParamSpec& p : c.scheduler->params) {
    const std::string& v = c.scheduler_params.at(p.name);
    if (v != p.canonical(p.default_value)) label += " " + p.name + "=" + v;
  }
  return label;
}
}  // namespace

std::string summary_table(const std::vector<CaseResult>& results) {
  auto key = [](const CaseResult& r) {
    return r.c.workload->name + "(" + describe(r.c.workload->params, r.c.workload_params) + ")";
  };
  auto reference = [&](const CaseResult& r, const std::string& sched, bool same_threads) -> double {
    for (const CaseResult& o : results) {
      if (scheduler_label(o.c) == sched && key(o) == key(r) && (!same_threads || o.c.threads == r.c.threads) &&
          !o.wall_ns.empty()) {
        return median(o.wall_ns);
      }
    }
    return NAN;
  };
  std::ostringstream out;
  out << std::left << std::setw(34) << "workload" << " " << std::setw(22) << "scheduler" << std::right
      << std::setw(8) << "threads" << std::setw(12) << "median ms" << std::setw(11) << "ns/task"
      << std::setw(13) << "vs serial" << std::setw(10) << "vs tbb" << "\n";
  for (const CaseResult& r : results) {
    if (r.wall_ns.empty()) continue;
    const double med = median(r.wall_ns);
    const double serial = reference(r, "serial", false);
    const double tbb = reference(r, "tbb", true);
    out << std::left << std::setw(34) << key(r) << " " << std::setw(22) << scheduler_label(r.c) << std::right
        << std::setw(8) << r.c.threads << std::setw(12) << format_double(med / 1e6, 2) << std::setw(11)
        << (std::isnan(r.tasks) ? "-" : format_double(med / r.tasks, 1)) << std::setw(13)
        << (std::isnan(serial) ? "-" : format_double(serial / med, 2) + "x") << std::setw(10)
        << (std::isnan(tbb) ? "-" : format_double(med / tbb, 2)) << "\n";
  }
  out << "vs serial: speedup over the sequential elision (higher is better); "
         "vs tbb: time relative to oneTBB at the same threads (lower is better)\n";
  return out.str();
}

}  // namespace schedlab
