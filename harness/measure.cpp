#include "measure.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <new>
#include <sstream>
#include <stdexcept>

#include "chrome_trace.hpp"
#include "counters/cache_model.hpp"
#include "counters/hw_counters.hpp"
#include "latency_file.hpp"
#include "metadata.hpp"
#include "registry.hpp"
#include "schedtrace.hpp"

namespace schedlab {
namespace {

struct Usage {
  double cpu_ns;
  long nvcsw, nivcsw;
};

// The whole process, as getrusage sees it: the harness thread is idle during a run, so the
// difference over a run is the workers' (and, for os-threads, the task threads').
Usage process_usage() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_usec) * 1e3; };
  return {ns(u.ru_utime) + ns(u.ru_stime), u.ru_nvcsw, u.ru_nivcsw};
}

std::uint64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

}  // namespace


std::string child_error_line(const std::string& stderr_path) {
  std::ifstream in(stderr_path);
  std::string last, error;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    last = line;
    if (line.rfind("schedlab: error: ", 0) == 0) error = line.substr(17);
  }
  return error.empty() ? last : error;
}

nlohmann::json measurement_to_json(const Measurement& m) {
  nlohmann::json counters = nlohmann::json::object();
  for (std::size_t k = 0; k < kCounterCount; ++k) {
    if (m.counters.measured[k]) counters[std::string(kCounters[k].name)] = m.counters.value[k];
  }
  nlohmann::json out = {{"wall_ns", m.wall_ns}, {"counters", counters}, {"events", m.events}};
  if (m.tasks) out["tasks"] = *m.tasks;
  if (m.cpu_ns) out["cpu_ns"] = *m.cpu_ns;
  if (m.nvcsw) out["nvcsw"] = *m.nvcsw;
  if (m.nivcsw) out["nivcsw"] = *m.nivcsw;
  if (m.model_l2_misses) out["model_l2_misses"] = *m.model_l2_misses;
  if (m.sched_delay) out["sched_delay"] = {{"source", m.sched_delay_source}, {"distribution", distribution_json(*m.sched_delay)}};
  if (m.request) out["request"] = {{"rate_per_s", m.request->rate_per_s}, {"distribution", distribution_json(m.request->latency)}};
  return out;
}

namespace {
template <class T>
void optional_from(const nlohmann::json& j, const char* key, std::optional<T>& into) {
  if (j.contains(key)) into = j[key].get<T>();
}
}  // namespace

Measurement measurement_from_json(const nlohmann::json& j) {
  Measurement m;
  m.wall_ns = j.at("wall_ns").get<double>();
  for (std::size_t k = 0; k < kCounterCount; ++k) {
    const std::string name(kCounters[k].name);
    if (j.at("counters").contains(name)) m.counters.set(static_cast<Counter>(k), j["counters"][name].get<std::uint64_t>());
  }
  m.events = j.at("events").get<std::map<std::string, long long>>();
  optional_from(j, "tasks", m.tasks);
  optional_from(j, "cpu_ns", m.cpu_ns);
  optional_from(j, "nvcsw", m.nvcsw);
  optional_from(j, "nivcsw", m.nivcsw);
  optional_from(j, "model_l2_misses", m.model_l2_misses);
  if (j.contains("sched_delay")) {
    m.sched_delay = distribution_from_json(j["sched_delay"].at("distribution"));
    m.sched_delay_source = j["sched_delay"].at("source").get<std::string>();
  }
  if (j.contains("request")) {
    m.request = RequestLatency{distribution_from_json(j["request"].at("distribution")), j["request"].at("rate_per_s").get<double>()};
  }
  return m;
}

void settle_task_count(Measurement& m, std::optional<std::uint64_t> observed,
                       std::optional<std::uint64_t> expected_spawned, const std::string& label) {
  // Exactly once, checked on every run where both sides are known.
  if (observed && expected_spawned && *observed != *expected_spawned + 1) {
    throw std::runtime_error("task count mismatch: " + label + ": executed " + std::to_string(*observed) +
                             " tasks, expected " + std::to_string(*expected_spawned + 1) +
                             " (a task was lost or ran twice)");
  }
  if (observed) {
    m.tasks = observed;
  } else if (expected_spawned) {
    m.tasks = *expected_spawned + 1;
  }
}

InProcessSubject::InProcessSubject(std::unique_ptr<Scheduler> scheduler, std::string label,
                                   std::string name, Watchers watchers)
    : scheduler_(std::move(scheduler)), label_(std::move(label)), name_(std::move(name)), watchers_(watchers) {}

void InProcessSubject::warm_up(Workload& w, unsigned runs) {
  for (unsigned i = 0; i < runs; ++i) (void)measure(w, false);
}

std::unique_ptr<InProcessSubject> InProcessSubject::elision(std::string label, Watchers watchers, bool pin) {
  auto s = std::make_unique<InProcessSubject>(nullptr, std::move(label), kElisionName, watchers);
  if (pin) s->elision_pin_ = allowed_cpus();
  return s;
}

std::unique_ptr<InProcessSubject> in_process_subject(const SchedulerEntry& s, unsigned threads,
                                                     const ParamValues& params, std::string label,
                                                     Watchers watchers) {
  SCHEDLAB_ASSERT(!s.external(), "an external program is not an in-process subject");
  if (s.elision()) return InProcessSubject::elision(std::move(label), watchers, param_str(params, "pin") == "on");
  return std::make_unique<InProcessSubject>(s.make(threads, params), std::move(label), s.name, watchers);
}

Measurement InProcessSubject::measure(Workload& w, bool traced) {
  Measurement m;
  try {
    m = run_timed(w, traced);
  } catch (const ResourceError& e) {  // the scheduler does not know what it was running
    throw ResourceError(label_ + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw ResourceError(label_ + ": out of memory (std::bad_alloc) during a run; use a smaller problem or "
                        "raise the process's memory limit");
  }
  if (std::string err = w.check(); !err.empty()) {
    throw std::runtime_error("wrong result: " + label_ + ": " + err);
  }
  m.request = w.request_latency();
  std::optional<std::uint64_t> observed;
  if (m.counters.has(Counter::tasks_executed)) observed = m.counters[Counter::tasks_executed];
  settle_task_count(m, observed, w.tasks_of_last_run(), label_);
  return m;
}

// The timed region and what brackets it. Invariant: nothing between the two clock reads but
// Scheduler::run, or the elision's run_elision (the counters, events, rusage and footprint log
// are read outside them).
Measurement InProcessSubject::run_timed(Workload& w, bool traced) {
  Scheduler* s = scheduler_.get();  // null: the elision
  ChromeTrace* timeline = traced ? watchers_.timeline : nullptr;
  if (timeline != nullptr && (s == nullptr || !s->trace_next_run(timeline->budget()))) {
    timeline->add_run(label_, {}, 0, 0,
                      s == nullptr ? "not traced: the sequential elision has no scheduler"
                                   : "not traced: this backend does not expose its worker threads");
    timeline = nullptr;
  }
  if (watchers_.schedtrace && s != nullptr) watchers_.schedtrace->watch(s, name_, label_);
  if (watchers_.model) footprints_.start();
  const CounterSet before = s != nullptr ? s->counters() : CounterSet{};
  if (s != nullptr) (void)s->take_sched_delays();  // the warm-up's, or an earlier run's
  const Usage u0 = process_usage();
  if (watchers_.events) {
    watchers_.events->start(s != nullptr ? s->worker_tids() : std::vector<pid_t>{static_cast<pid_t>(::gettid())});
  }
  std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point> region;
  try {
    region = run_region(w);
  } catch (...) {
    if (watchers_.events) (void)watchers_.events->stop();
    if (watchers_.schedtrace) watchers_.schedtrace->watch(nullptr, "", "");
    footprints_.stop();
    throw;
  }
  const auto [t0, t1] = region;
  Measurement m;
  if (watchers_.events) {
    for (const auto& [column, value] : watchers_.events->stop()) {
      if (value) m.events[column] = *value;
    }
  }
  if (timeline != nullptr) timeline->add_run(label_, s->take_trace(), steady_ns(t0), steady_ns(t1));
  const Usage u1 = process_usage();
  if (watchers_.schedtrace) watchers_.schedtrace->watch(nullptr, "", "");
  // The elision has no scheduler and so no counters: every one of them stays unmeasured.
  if (s != nullptr) m.counters = s->counters() - before;
  if (s != nullptr && (m.sched_delay = s->take_sched_delays())) m.sched_delay_source = kDelaysRecorded;
#if !SCHEDLAB_STATS
  // The build without counters (it measures what they cost): nothing was counted, so nothing
  // may be written as a number.
  m.counters.measured.reset();
#endif
  m.wall_ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  m.cpu_ns = u1.cpu_ns - u0.cpu_ns;
  m.nvcsw = u1.nvcsw - u0.nvcsw;
  m.nivcsw = u1.nivcsw - u0.nivcsw;
  if (watchers_.model) {
    footprints_.stop();
    // A workload that declares no footprint records nothing: its cell stays empty, not 0. The
    // model gives each worker thread a core; where more threads ran tasks than the case has
    // workers (os-threads: a thread per task), that does not hold and the cell stays empty too.
    const std::vector<Footprint> record = footprints_.records();
    if (!record.empty() && footprints_.workers() <= (s != nullptr ? s->threads() : 1u)) {
      m.model_l2_misses = replay_misses(record, footprints_.workers(), *watchers_.model);
    }
  }
  return m;
}

std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>
InProcessSubject::run_region(Workload& w) {
  const bool bracket = std::exchange(bracket_next_, false);
  std::optional<ScopedPin> pinned;
  if (elision_pin_) {
    pinned.emplace(pinned_cpus(*elision_pin_, 0, 1));
    if (pinned->error() != 0) throw ResourceError(pin_refused("the elision's thread", pinned->error()));
  }
  // The A/B mode's slowed build (slow_down_for_test): a spin inside the measured region, 0 else.
  const auto delay = std::chrono::nanoseconds(test_delay_ns_per_task_ * (w.expected_tasks().value_or(0) + 1));
  const auto spin_for_test = [delay] {
    const auto until = std::chrono::steady_clock::now() + delay;
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  if (bracket) simulated_region_begin();
  const auto t0 = std::chrono::steady_clock::now();
  if (scheduler_ != nullptr) {
    scheduler_->run([&w, &spin_for_test] {
      spin_for_test();
      w.run();
    });
  } else {
    spin_for_test();
    w.run_elision();
  }
  const auto t1 = std::chrono::steady_clock::now();
  if (bracket) simulated_region_end();
  return {t0, t1};
}

}  // namespace schedlab
