// measure.hpp: the measurement protocol, one repetition at a time.
//
//   Subject ──measure(workload)──► Measurement ──(row.hpp)──► one CSV row
//
// A Subject is what runs a workload: an in-process Scheduler (InProcessSubject, here), the
// workload's sequential elision with no scheduler at all (also InProcessSubject), or an external
// program that times its own measured region (GoProgramSubject, go_reference.hpp).
// Every Subject follows the same protocol, so `schedlab run` and `schedlab_gbench` measure the
// same thing:
//
//   counters, rusage, events ─► clock ─► Scheduler::run(workload) ─► clock ─► events, rusage,
//   counters ─► the workload's own check ─► exactly once: tasks executed = expected + root
//
// A wrong result or a lost or duplicated task throws std::runtime_error naming the case, so no
// row is ever written for a run that computed the wrong thing; a run that ran out of threads or
// memory throws ResourceError (scheduler.hpp) naming the case.
//
// Around every repetition of a block the runner accounts for the machine too (machine_load.hpp:
// what other processes and the hypervisor took from each row's CPUs while it ran; the speed
// probe, speed_probe.hpp), and sets each Measurement's `machine`.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "counters.hpp"
#include "counters/cache_geometry.hpp"
#include "counters/sim.hpp"
#include "footprint.hpp"
#include "machine_load.hpp"
#include "cpu_pin.hpp"
#include "plan.hpp"
#include "scheduler.hpp"
#include "workload.hpp"

namespace schedlab {

class ChromeTrace;
class HwCounters;
class SchedTracer;

// What the workload says about itself for one case, computed, not measured. The same for every
// repetition of the case, so the runner asks once per case and copies it into each Measurement.
struct WorkloadFacts {
  std::optional<double> work_span_ratio;    // Workload::work_span_ratio()
  std::optional<double> round_robin_ratio;  // Workload::round_robin_ratio(the case's threads)
};

// What one repetition measured. An absent value is "not measured", never 0.
struct Measurement {
  double wall_ns = 0;  // the measured region: Scheduler::run of the workload's root task
  // Tasks run, root included: what the subject observed, else what the workload expects.
  std::optional<std::uint64_t> tasks;
  CounterSet counters;  // the scheduler's own counters; measured bits clear where unobserved
  std::optional<double> cpu_ns;       // process user + system time during the run (getrusage)
  std::optional<long> nvcsw, nivcsw;  // process voluntary / involuntary context switches
  std::map<std::string, long long> events;  // hardware/kernel events by CSV column
  MachineLoad machine;  // on its CPUs, during its block repetition (set by the runner)
  WorkloadFacts facts;  // of the case this measurement belongs to (set by the runner)
  // Times of the same block repetition that this one is compared with (set by the runner; absent
  // when the block did not measure them): the sequential elision's wall_ns (T_S), and this
  // variant's own wall_ns at 1 thread (T_1). Native runs only: a simulated time is Valgrind's.
  std::optional<double> elision_ns;
  std::optional<double> one_thread_ns;
  // Valgrind's counts of the measured region, when it ran under the simulator (sim.hpp).
  std::optional<SimCounts> sim;
  // The per-core cache model's misses (cache_model.hpp), when footprints were recorded and the
  // workload declares its footprint (locality, matmul).
  std::optional<std::uint64_t> model_l2_misses;
  // The run's scheduling delays (latency.hpp), when its scheduler recorded them: a fiber
  // scheduler with --latency on, or go-runtime's own /sched/latencies:seconds (which Go samples,
  // one transition in 8: sched_delay_source says whose).
  std::optional<LatencyDistribution> sched_delay;
  std::string sched_delay_source;
  // The requests' latency and rate, for an open-loop workload (Workload::request_latency).
  std::optional<RequestLatency> request;
};

// Where a row's scheduling delays came from (Measurement::sched_delay_source).
inline constexpr char kDelaysRecorded[] = "schedlab";  // every delay, by the fiber runtime
inline constexpr char kDelaysFromGo[] = "go";          // Go's runtime/metrics histogram

class Subject {
 public:
  virtual ~Subject() = default;
  // `runs` untimed runs before the repetitions (pools filled, caches warm).
  virtual void warm_up(Workload& w, unsigned runs) = 0;
  // One measured repetition, checked: run, time, count, check. `traced`: record a timeline of
  // it, if tracing is on. Throws std::runtime_error for a wrong result, a task count mismatch
  // or a failed run.
  virtual Measurement measure(Workload& w, bool traced) = 0;
};

// A Subject whose every repetition is another process (the Go twin, schedlab under Valgrind):
// the warm-up runs inside each one, because a new process starts cold, so warm_up() is empty.
class ProcessSubject : public Subject {
 public:
  explicit ProcessSubject(const Case& c) : case_(c) {}
  void warm_up(Workload&, unsigned) final {}

 protected:
  const Case case_;
};



// What a schedlab child (a simulated repetition, an A/B server) said when it failed, from the file
// its stderr went to: its own error line ("schedlab: error: ..." without the prefix), else its
// last line, else "".
std::string child_error_line(const std::string& stderr_path);

// What watches an in-process run besides the clock; each may be null.
struct Watchers {
  HwCounters* events = nullptr;       // per-worker hardware/kernel events
  SchedTracer* schedtrace = nullptr;  // --schedtrace lines
  ChromeTrace* timeline = nullptr;    // --trace
  // --counters model: record the tasks' footprints and replay them through one cache of this
  // geometry per worker (cache_model.hpp).
  std::optional<CacheGeometry> model;
};

class InProcessSubject final : public Subject {
 public:
  // `label` names the case in errors and traces; `name` is the scheduler's (schedtrace).
  InProcessSubject(std::unique_ptr<Scheduler> scheduler, std::string label, std::string name,
                   Watchers watchers);
  // The sequential elision (Workload::run_elision) timed on the calling thread, with no
  // scheduler: no scheduler counters, trace or schedtrace; events count the calling thread;
  // `pin`: the thread runs on the first allowed CPU during each repetition (bound before the
  // clock starts and released after it stops).
  static std::unique_ptr<InProcessSubject> elision(std::string label, Watchers watchers, bool pin);
  void warm_up(Workload& w, unsigned runs) override;
  Measurement measure(Workload& w, bool traced) override;
  // The scheduler; not for an elision subject.
  Scheduler& scheduler() {
    SCHEDLAB_ASSERT(scheduler_ != nullptr, "an elision subject has no scheduler");
    return *scheduler_;
  }
  // The next run's measured region is the simulator's: bracketed by its client requests
  // (sim.hpp). Used by the simulated child, after its warm-up runs.
  void bracket_next_run_for_simulator() { bracket_next_ = true; }
  // A build slowed on purpose, for the A/B mode's tests only (served_subject.hpp,
  // kServeTestDelayEnv): every measured region spins `ns` per task the workload expects before
  // the root's body. Never set by `schedlab run`'s own subjects.
  void slow_down_for_test(std::uint64_t ns_per_task) { test_delay_ns_per_task_ = ns_per_task; }

 private:
  Measurement run_timed(Workload& w, bool traced);
  // The clock around Scheduler::run, and the simulator's bracket when asked for.
  std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point> run_region(Workload& w);

  // Null for the elision: the region is Workload::run_elision on this thread.
  std::unique_ptr<Scheduler> scheduler_;
  std::optional<std::vector<int>> elision_pin_;  // elision with --pin on: the CPUs allowed at build
  const std::string label_;
  const std::string name_;
  Watchers watchers_;
  FootprintLog footprints_;
  bool bracket_next_ = false;
  std::uint64_t test_delay_ns_per_task_ = 0;
};

// The in-process subject of `s` (kind in_process or elision): its scheduler built with `threads`
// and `params`, or the sequential elision. Throws what building the scheduler throws.
std::unique_ptr<InProcessSubject> in_process_subject(const SchedulerEntry& s, unsigned threads,
                                                     const ParamValues& params, std::string label,
                                                     Watchers watchers);

// A Measurement as JSON and back, for the children that measure in another process (the
// simulated repetition, the A/B servers) and send it to the runner. Everything but what the
// runner sets itself (machine, facts, elision_ns, one_thread_ns; sim, read from Valgrind's
// dump): tests/measurement_json_test.cpp round-trips every other field and pins the struct's
// size, so that a new field is not left out.
nlohmann::json measurement_to_json(const Measurement& m);
Measurement measurement_from_json(const nlohmann::json& j);

// The end of every Subject's measure(): the tasks figure, and exactly once. `observed` is the
// subject's count of tasks executed (root included), if it has one. Throws
// std::runtime_error("task count mismatch: LABEL: ...") when it differs from the expectation.
void settle_task_count(Measurement& m, std::optional<std::uint64_t> observed,
                       std::optional<std::uint64_t> expected_spawned, const std::string& label);

}  // namespace schedlab
