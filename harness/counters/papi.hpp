// papi.hpp: the PAPI back end's process-wide state: the library, initialised once by the probe;
// trying a candidate event on a thread; creating and destroying the event sets attached to a
// worker thread. <papi.h> stays out of this header.
// Every PAPI call goes through g_papi_mutex: PAPI's event-set setup is not thread-safe.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <string>

#include "counters/columns.hpp"

namespace schedlab::counters {

extern std::mutex g_papi_mutex;

// PAPI's text for an error code, with the code.
std::string papi_error(int code);

struct PapiState {
  bool ok = false;            // library initialised
  std::string init;           // what happened at initialisation
  int perf_cidx = -1;         // the perf_event component
  std::string perf_disabled;  // its disabled reason, empty when enabled
  bool domain_all = false;    // PAPI_set_domain(PAPI_DOM_ALL) accepted
  bool multiplex_ok = false;  // PAPI_multiplex_init succeeded
  int hw_counters = 0;        // PAPI_num_cmp_hwctrs of perf_event
};

// Caller holds g_papi_mutex.
PapiState init_papi();

// Creates an event set bound to component `cidx` (attach and multiplex both need that before
// events are added) and attached to thread `tid`: what the probe and each worker's counters do
// before adding events. On failure returns the PAPI error and names the failing call in *step;
// *set is then PAPI_NULL or a set for the caller to destroy. Caller holds g_papi_mutex.
int create_attached_set(int cidx, pid_t tid, int* set, const char** step);

// Caller holds g_papi_mutex.
void destroy_set(int* set);

// Caller holds g_papi_mutex.
Tried try_papi(const PapiState& st, const std::string& name);

}  // namespace schedlab::counters
