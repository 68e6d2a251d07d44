// registry.hpp: every scheduler and workload the harness can run, by name, with its parameters.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "params.hpp"
#include "scheduler.hpp"
#include "workload.hpp"

namespace schedlab {

// The most --threads a run may ask for. The one limit the command line (main.cpp), the presets
// (presets.cpp), gbench and the schedulers' defaults (registry.cpp) all check against.
inline constexpr unsigned kMaxThreads = 1024;

// How the cases of a SchedulerEntry are measured.
enum class SchedulerKind {
  in_process,  // a Scheduler built by `make` runs the workload's tasks in this process
  elision,     // no scheduler: the workload's sequential elision (Workload::run_elision) on the
               // harness thread, the T_S every speedup is measured against; `make` is empty
  external,    // another program: the workload's twin (the Go reference programs, `go-runtime`);
               // `make` is empty
};

struct SchedulerEntry {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  // threads is already checked to be in 1..kMaxThreads; params are resolved. Empty unless
  // kind is in_process.
  std::function<std::unique_ptr<Scheduler>(unsigned threads, const ParamValues& params)> make;
  // The scheduler runs every task on one thread whatever --threads says (serial, elision).
  bool single_threaded = false;
  SchedulerKind kind = SchedulerKind::in_process;
  bool external() const noexcept { return kind == SchedulerKind::external; }
  bool elision() const noexcept { return kind == SchedulerKind::elision; }
  // A peer: an established runtime a user would pick instead of schedlab's own designs
  // (oneTBB, Boost.Fiber, OpenMP, Go itself), the yardstick of the "vs best peer" column and
  // the report's peers figure. fair, central, steal-half (the designs under study), serial and
  // os-threads (baselines) are not peers.
  bool peer = false;
  // Throws ParamError for a combination of threads and parameters that `make` would refuse and
  // the single values do not show, without starting anything: plan() calls it for every case, so
  // that a bad value is refused before the first file is written. Empty: nothing to check.
  std::function<void(unsigned threads, const ParamValues& params)> validate;
};

// The names of the peers, in registry order.
std::vector<std::string> peer_names();

struct WorkloadEntry {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Workload>(const ParamValues& params)> make;
  // Replaces the parameters left at "auto" (ParamSpec::allows_auto) by the values this machine
  // and the other parameters give them; plan() calls it, so that a case's name, its CSV row and
  // its parameters say the numbers that ran. `make` settles too. Empty: nothing is auto.
  std::function<void(ParamValues& params)> settle;
};

const std::vector<SchedulerEntry>& scheduler_registry();
const std::vector<WorkloadEntry>& workload_registry();

// Throw ParamError ("unknown scheduler 'x': choose one of ...") for names not registered.
// Why a scheduler schedlab has is missing from this build (a backend whose library the build
// left out: the TSan build leaves out tbb, boost-fiber and openmp), or nullopt.
std::optional<std::string> missing_from_this_build(const std::string& name);
const SchedulerEntry& find_scheduler(const std::string& name);
const WorkloadEntry& find_workload(const std::string& name);

// The name of the sequential elision's entry (SchedulerKind::elision).
inline constexpr const char* kElisionName = "elision";

// Builds a scheduler by name with default parameters (tests, gbench). Throws ParamError for an
// entry that is not an in-process scheduler (elision, go-runtime).
std::unique_ptr<Scheduler> make_scheduler(const std::string& name, unsigned threads,
                                          const ParamValues& params = {});

// Every parameter of every scheduler and workload, each name once, in a stable order: the
// parameter columns of the CSV.
std::vector<ParamSpec> all_param_specs();

}  // namespace schedlab
