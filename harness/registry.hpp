// registry.hpp: every scheduler and workload the harness can run, by name, with its parameters.
//
// Each component declares itself in its own folder: schedulers/X/entry.cpp defines
// `std::vector<SchedulerEntry> scheduler_entries_X()` (schedulers/scheduler_entry.hpp),
// workloads/X/entry.cpp `std::vector<WorkloadEntry> workload_entries_X()`
// (workloads/workload_entry.hpp); an entry includes nothing of the harness (the build compiles
// the entries without the harness's headers on their path). The build finds every such file
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
#include "scheduler_entry.hpp"
#include "workload_entry.hpp"

namespace schedlab {

// The names of the peers, in registry order.
std::vector<std::string> peer_names();

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
