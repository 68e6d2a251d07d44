// probe.hpp: what this machine can count, found out once per process. For each column: every
// candidate tried and why it can or cannot count, the one chosen (the first that can be set up
// on a thread), and for a software event whether it really counts. HwCounters plans from this;
// `schedlab counters` prints it.
#pragma once

#include <string>
#include <vector>

#include "counters/columns.hpp"
#include "counters/papi.hpp"

namespace schedlab::counters {

struct KernelEvent;

enum class Backend { papi, kernel };

struct ProbedEvent {
  std::vector<Tried> tried;
  int chosen = -1;  // index into tried/candidates
  Backend backend = Backend::papi;
  const KernelEvent* kev = nullptr;
  bool exclude_kernel = false;  // kernel back end, hardware event, counted in user space only
  std::string refused;          // set when the candidate adds but does not really count
};

struct Probe {
  PapiState papi;
  int paranoid = -1;
  std::vector<ProbedEvent> events;  // parallel to hw_events()
};

// The chosen event as the sidecar names it ("kernel:cycles:u" when user space only); empty
// when none was chosen.
std::string event_label(const ProbedEvent& p);

bool probed_available(const ProbedEvent& p);

// Why the column is unavailable: the refusal, or every candidate's reason; empty if available.
std::string probed_reason(const ProbedEvent& p);

// Runs the probe on first use, on the calling thread; thread-safe.
const Probe& probe();

}  // namespace schedlab::counters
