// hw_counters.hpp: hardware and kernel event counts of a scheduler's worker threads, per run;
// the facade of harness/counters/, the only part of it that the rest of the harness uses.
//
// Eight fixed CSV columns (hw_events()) are filled from PAPI when it can count the event on a
// worker thread, else from the kernel's generic perf_event encodings (perf_event_open). PAPI
// often cannot: without a PMU its perf_event component is disabled ("libpfm4 no default PMU
// found"; libpfm4 can also lack a new CPU model on bare metal), and on this project's VM it adds
// events that it then cannot attach to a thread. The kernel still counts context switches, page
// faults and (where there is a PMU) instructions, cycles and cache misses. Further back ends
// Two more back ends sit beside these: simulated cache counters from Valgrind (`--counters sim`,
// counters/sim.hpp: a simulated case runs in a child process under the simulator) and the
// per-core cache model (`--counters model`, counters/cache_model.hpp). They fill their own
// columns (sim_*, model_l2_misses), not these eight.
//
// Probed once per process: which event each column uses (the first candidate that can be set
// up on a thread), and whether a software event really counts (a probe sleeps and touches fresh
// pages on the probing thread; an event that reads 0 there is the "kernel-side counting
// refused" case of perf_event_paranoid and is reported unavailable, never written as 0).
//
// Counting is third-party: one event set (PAPI_attach) or one perf_event group per worker tid,
// opened by the harness thread; each run is the difference of a read at start() and one at
// stop(), summed over the threads. Counting is switched on at a thread's first run and left on:
// reads are cheap, while PAPI_start re-opens an attached set and a perf ioctl interrupts the
// CPU the worker last ran on. Event sets are cached by thread and reused while the thread lives,
// so a run costs a few system calls per thread; a thread is identified by an open /proc comm
// file, which fails with ESRCH once the thread is gone, even if its tid has been given to a new
// thread.
//
// Parts: columns (the column table), papi and kernel_events (the back ends), probe (what this
// machine can count), thread_counters (one worker's counters), report.cpp (`schedlab counters`).
#pragma once

#include <sys/types.h>

#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace schedlab {

struct HwEvent {
  std::string column;                   // CSV column, e.g. "papi_l1_dcm"
  std::vector<std::string> candidates;  // tried in order: PAPI names, then "kernel:NAME"
  bool hardware = false;                // needs a PMU (false: a kernel software event)
  std::string what;                     // one line for `schedlab counters`
};

// The eight columns, in CSV order.
const std::vector<HwEvent>& hw_events();

// --counters: "default" (all 8), "none", "sw" (software events), "cache" (the three cache
// columns) or a comma list of column names and those group names. Returns column names in CSV
// order, without duplicates. Throws ParamError "unknown counter 'x': choose from ..." naming x.
std::vector<std::string> parse_counter_selection(const std::string& text);

// The whole --counters value: the event columns (as parse_counter_selection), plus "sim" (every
// case runs under Valgrind's cache simulator) and "model" (footprints recorded for the per-core
// cache model). "sim" or "model" alone selects no event. Throws ParamError as above.
struct CounterSelection {
  std::vector<std::string> events;
  bool simulated = false;
  bool modelled = false;
};
CounterSelection parse_counters(const std::string& text);

struct CounterAvailability {
  std::string column;
  std::string event;  // the event that counts it ("PAPI_TOT_INS", "kernel:context-switches"); empty
                      // when unavailable
  bool available = false;
  std::string reason;  // why not (PAPI's or the kernel's error text for every candidate tried)
};

class HwCounters {
 public:
  // Probes availability (once per process) and prepares counting of `columns` (names from
  // hw_events(); throws ParamError for others). Never throws for a missing PMU or refused
  // permission: those columns are unavailable, with the reason.
  explicit HwCounters(std::vector<std::string> columns);
  ~HwCounters();
  HwCounters(HwCounters&&) noexcept;
  HwCounters& operator=(HwCounters&&) noexcept;

  const std::vector<std::string>& columns() const;
  const std::vector<CounterAvailability>& availability() const;

  // Begins counting on these threads (kernel tids of this process). Threads seen before and
  // still alive reuse their event sets; new ones get theirs now. Unavailable events are
  // skipped. A tid that is already gone is skipped with a note (it can do no work in the run).
  // Throws std::logic_error if a run is already being counted.
  void start(const std::vector<pid_t>& tids);

  // Stops counting and returns, per selected column (in columns() order), the sum over the
  // threads, or nullopt when it was not measured: unavailable, no threads, or a thread's count
  // could not be read or set up (a partial sum would under-report, so none is given). A thread
  // that exited during the run is not an error: the kernel keeps its counts up to its exit and
  // they are included (noted). Throws std::logic_error without a matching start().
  std::vector<std::pair<std::string, std::optional<long long>>> stop();

  // True when the PAPI event set is multiplexed, or when the kernel time-shared a counter in any
  // run so far (values are then scaled estimates).
  bool multiplexed() const;

  // Things worth knowing about the runs so far (thread exits, lost counts), without repeats.
  const std::vector<std::string>& notes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `schedlab counters`: every column, its candidates and why each is or is not usable, the
// perf_event_paranoid value, PAPI's state and whether the default selection multiplexes; then
// the simulated and modelled back ends with the geometry a run would use (`sim_l1`, `sim_ll`:
// --sim-l1, --sim-ll, empty for this machine's). Returns 0 (a machine without counters is not
// an error).
int print_counter_report(std::ostream& out, const std::string& sim_l1 = "", const std::string& sim_ll = "");

// For the run's sidecar: {"available": [columns], "unavailable": {column: reason},
// "events": {column: event used}, "multiplexed": bool, "scope": "...", "notes": [...]}.
nlohmann::json counter_metadata(const HwCounters& counters);

}  // namespace schedlab
