// workload_entry.hpp: what a workload declares of itself in its folder's entry.cpp
// (workloads/X/entry.cpp defines `std::vector<WorkloadEntry> workload_entries_X()`).
//
// Below the harness, beside the workloads, so that a component's entry includes only the floors
// below the harness (as scheduler_entry.hpp); harness/registry.hpp collects the entries.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "params.hpp"
#include "workload.hpp"

namespace schedlab {

// What a workload's tasks wait for besides their joins (api.hpp): a backend that cannot park a
// task is refused the workloads whose tasks wait on something it cannot park them on.
enum class TaskWaits {
  joins,     // only joins and wait groups (every backend)
  locks,     // also a locked Mutex: its waiter parks (a task never waits while holding one)
  channels,  // also channels: a task waits for another's send or receive
};

struct WorkloadEntry {
  std::string name;
  std::string summary;
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Workload>(const ParamValues& params)> make;
  // Replaces the parameters left at "auto" (ParamSpec::allows_auto) by the values this machine
  // and the other parameters give them; plan() calls it, so that a case's name, its CSV row and
  // its parameters say the numbers that ran. `make` settles too. Empty: nothing is auto.
  std::function<void(ParamValues& params)> settle;
  // What `settle` reads of this machine to choose its "auto" values, and why each value: the
  // sidecar of a run with a case of this workload records it as NAME_sizing (locality:
  // locality_sizing, its caches and the rule for each size). Empty: nothing to record.
  std::function<nlohmann::json()> sizing;
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

}  // namespace schedlab
