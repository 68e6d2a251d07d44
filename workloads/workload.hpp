// workload.hpp: what the harness runs under each scheduler.
//
// A workload is written once against api.hpp. The harness calls prepare() once, then for each
// repetition run() inside Scheduler::run() (the timed region, run() being the root task's body)
// followed by check(), and cleanup() at the end. A workload never reads a counter or writes a
// file of results; it only computes, and says whether what it computed is right.
//
// Every workload also has its sequential elision, run_elision(): the same program with every
// spawn a plain call and no scheduler at all (api.hpp, Tasks and Elision), which the harness
// times as `--scheduler elision`, the T_S of every speedup. A workload whose body is one
// template over the execution type derives from ElidableWorkload and gets both from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api.hpp"
#include "latency.hpp"

namespace schedlab {

// What an open-loop workload measured of its last run (netmix --load open): every request's
// latency from its intended send time to its reply, and the rate of replies achieved.
struct RequestLatency {
  LatencyDistribution latency;
  double rate_per_s = 0;  // requests answered per second, from the schedule's start to the last reply
};

class Workload {
 public:
  virtual ~Workload() = default;

  // Builds inputs (files, arrays) outside the timed region. Throws std::runtime_error whose
  // message names the problem and the fix.
  virtual void prepare() {}
  // The measured region; runs as the root task of Scheduler::run().
  virtual void run() = 0;
  // The same computation as the sequential elision (every spawn a plain call), on the calling
  // thread and outside any Scheduler::run(); check() must accept its result as it does run()'s.
  virtual void run_elision() = 0;
  // Called after each run: empty if the result is right, otherwise what was wrong.
  virtual std::string check() = 0;
  // Tasks one run spawns, root excluded, computed from the parameters alone: cheap, and valid
  // before prepare() (`schedlab run --dry-run` shows it for every case without preparing
  // anything). nullopt: not known before running (nqueens beyond its table); optional
  // everywhere: the dry run prints "unknown", and the checks use tasks_of_last_run().
  virtual std::optional<std::uint64_t> expected_tasks() const { return std::nullopt; }
  // Tasks the last run spawned, root excluded, by the workload's own count: what every run's
  // tasks_executed is checked against (measure.cpp, the workload tests), exactly-once. The
  // default is expected_tasks(); a workload that counts its tasks as it runs (nqueens beyond
  // its table carries the count through its joins, nqueens.cpp) returns that count after a
  // run. nullopt: the run is not checked for exactly-once.
  virtual std::optional<std::uint64_t> tasks_of_last_run() const { return expected_tasks(); }
  // Total work over the longest task (W / Lmax), when the workload knows its task lengths:
  // on P processors no schedule beats an efficiency of min(1, W / (P x Lmax)).
  virtual std::optional<double> work_span_ratio() const { return std::nullopt; }
  // What a static split must lose on these task lengths: the makespan of binding task i to
  // processor i mod P (fair's rule) over the best any schedule reaches, max(W/P, Lmax), both
  // from the lengths alone (no overhead, equal processors). 1 where the split is perfect. The
  // claims leave out a configuration where this leaves a stealing design too little to win
  // (criteria.toml, `room`).
  virtual std::optional<double> round_robin_ratio(unsigned /*processors*/) const { return std::nullopt; }
  // What the workload itself saw of a run it did not run: an external twin's (the Go program's)
  // against its inputs. "" if right, else what was wrong (netmix --load open: the generator's
  // replies). check() includes it for the workload's own runs.
  virtual std::string check_external() { return {}; }
  // What the last run measured of its requests' latency, for a workload that sends requests on
  // a schedule of its own (netmix --load open: its load generator, outside the scheduler); valid
  // after run() or after an external twin's run against the same inputs. nullopt: the workload
  // measures no request latency.
  virtual std::optional<RequestLatency> request_latency() const { return std::nullopt; }
  // Removes what prepare() made. Called even when a run failed.
  virtual void cleanup() {}
  // What an external twin of this workload (the Go reference programs) needs beyond the
  // parameters to run on the same inputs, as flag name -> value (iomix: the file directory).
  // Valid between prepare() and cleanup().
  virtual std::vector<std::pair<std::string, std::string>> external_args() const { return {}; }
};

// A workload whose body is written once, as `template <class X> void body()` over the execution
// type (Tasks or Elision, api.hpp): run() is body<Tasks>() and run_elision() body<Elision>(), so
// the parallel program and its elision cannot drift apart.
template <class Derived>
class ElidableWorkload : public Workload {
 public:
  void run() final { static_cast<Derived*>(this)->template body<Tasks>(); }
  void run_elision() final { static_cast<Derived*>(this)->template body<Elision>(); }
};

}  // namespace schedlab
