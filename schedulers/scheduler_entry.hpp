// scheduler_entry.hpp: what a scheduler declares of itself in its folder's entry.cpp
// (schedulers/X/entry.cpp defines `std::vector<SchedulerEntry> scheduler_entries_X()`).
//
// Below the harness, beside the schedulers, so that a component's entry includes only its own
// floor: the harness (harness/registry.hpp) collects the entries and every list of schedulers
// (the CLI, the tests, gbench, the docs' tables) reads that collection.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "counters.hpp"
#include "params.hpp"
#include "scheduler.hpp"

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
  // Where the entry stands in `schedlab list`, the CSV's parameter columns and every test:
  // ascending, ties by folder name. New entries may leave it (they go last).
  int rank = 1000;
  // A worked example of the guide (docs/extending.md), not a design under study: the tests run
  // it like any other, no preset or claim does.
  bool example = false;
  // The counters its runs observe (CounterSet::measured), so that the CSV's "empty when" for
  // each counter column names the schedulers that leave it empty (row.cpp) instead of a list
  // kept by hand. Every one by default: the fiber runtime's schedulers observe them all. A backend
  // built on another runtime declares its few; the conformance tests compare the declaration
  // with what a run reports (tests/scheduler_test.cpp), so it cannot drift.
  CounterMask counters = CounterMask{}.set();
  // Non-empty: the scheduler is missing from this build, and why (a backend whose library the
  // build left out). Such an entry is not in scheduler_registry().
  std::string missing;
  // Why the scheduler cannot run a workload whose tasks wait on a locked mutex, or on a
  // channel (WorkloadEntry::waits); empty: it can. plan() refuses such a case before anything
  // runs, with this reason (cannot_run below).
  std::string cannot_wait_locks;
  std::string cannot_wait_channels;
};

// The name of the sequential elision's entry (SchedulerKind::elision).
inline constexpr const char* kElisionName = "elision";

}  // namespace schedlab
