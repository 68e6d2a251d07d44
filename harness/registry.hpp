// registry.hpp: every scheduler and workload the harness can run, by name, with its parameters.
//
// Each component declares itself in its own folder: schedulers/X/entry.cpp defines
// `std::vector<SchedulerEntry> scheduler_entries_X()`, workloads/X/entry.cpp
// `std::vector<WorkloadEntry> workload_entries_X()`. The build finds every such file
// (harness/CMakeLists.txt) and lists the functions for registry.cpp to call: a new scheduler or
// workload is a new folder and nothing else (docs/extending.md). Explicit functions, not static
// initialisers, because a linker drops an object of a static library that nothing references.
// Everything that enumerates components (the CLI, the tests, gbench, the Go twins) reads the
// registry.
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

// What a workload's tasks wait for besides their joins (api.hpp): a backend that cannot park a
// task is refused the workloads whose tasks wait on something it cannot park them on.
enum class TaskWaits {
  joins,     // only joins and wait groups (every backend)
  locks,     // also a locked Mutex: its waiter parks (a task never waits while holding one)
  channels,  // also channels: a task waits for another's send or receive
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
  // Where the entry stands in `schedlab list`, the CSV's parameter columns and every test:
  // ascending, ties by folder name. New entries may leave it (they go last).
  int rank = 1000;
  // A worked example of the guide (docs/extending.md), not a design under study: the tests run
  // it like any other, no preset or claim does.
  bool example = false;
  // Non-empty: the scheduler is missing from this build, and why (a backend whose library the
  // build left out). Such an entry is not in scheduler_registry().
  std::string missing;
  // Why the scheduler cannot run a workload whose tasks wait on a locked mutex, or on a
  // channel (WorkloadEntry::waits); empty: it can. plan() refuses such a case before anything
  // runs, with this reason (cannot_run below).
  std::string cannot_wait_locks;
  std::string cannot_wait_channels;
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
  // Where the entry stands among the workloads (as SchedulerEntry::rank).
  int rank = 1000;
  // Small parameter sets (each a few milliseconds under every scheduler, given values over the
  // defaults) on which the workload tests run it under every scheduler and its elision, one
  // test per workload x scheduler (tests/workloads_test.cpp). At least one.
  std::vector<ParamValues> test_params;
  // schedlab-go (workloads/go) has a twin of this workload, which `go-runtime` runs.
  bool go_twin = false;
  // Whether a configuration measures its requests' latency (Workload::request_latency: netmix
  // --load open), so that the run keeps the latency file (latency_file.hpp). Empty: never.
  std::function<bool(const ParamValues& params)> measures_requests;
  // schedlab_gbench's values where they differ from the defaults (smaller trees).
  ParamValues gbench_defaults;
  // What its tasks wait on besides joins: the schedulers that cannot park them refuse it.
  TaskWaits waits = TaskWaits::joins;
};

// Why scheduler `s` cannot run workload `w` ("scheduler X cannot run workload Y: ..."), or
// nullopt when it can.
std::optional<std::string> cannot_run(const SchedulerEntry& s, const WorkloadEntry& w);

const std::vector<SchedulerEntry>& scheduler_registry();
const std::vector<WorkloadEntry>& workload_registry();

// Why a scheduler schedlab has is missing from this build (a backend whose library the build
// left out: the TSan build leaves out tbb, boost-fiber and openmp), or nullopt.
std::optional<std::string> missing_from_this_build(const std::string& name);
// Throw ParamError ("unknown scheduler 'x': choose one of ...") for names not registered.
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

// What parameter `name` means with its accepted values: "compute fib(n) [0..50]" when every
// owner declares it alike, else per group of owners ("fib-go, fib: compute fib(n) [0..50];
// nqueens: the board is n x n [1..16]"): --n and --tasks mean different things to different
// workloads. `schedlab run --help` says it so, and `schedlab columns` without the ranges.
std::string param_meaning(const std::string& name, bool with_accepted = true);

}  // namespace schedlab
