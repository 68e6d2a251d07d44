// papi.cpp: the PAPI back end (papi.hpp): library initialisation, whether a named event can be
// counted on a thread, and the event-set steps that the probe and the workers' counters share.
#include "counters/papi.hpp"

#include <papi.h>

#include <algorithm>

#include "counters/kernel_events.hpp"

namespace schedlab::counters {

std::mutex g_papi_mutex;

std::string papi_error(int code) {
  const char* s = PAPI_strerror(code);
  return (s ? std::string(s) : "PAPI error") + " (" + std::to_string(code) + ")";
}

PapiState init_papi() {
  PapiState st;
  const int v = PAPI_library_init(PAPI_VER_CURRENT);
  if (v != PAPI_VER_CURRENT) {
    st.init = v > 0 ? "PAPI_library_init: header/library version mismatch"
                    : "PAPI_library_init: " + papi_error(v);
    return st;
  }
  st.ok = true;
  st.init = "PAPI " + std::to_string(PAPI_VERSION_MAJOR(PAPI_VERSION)) + "." +
            std::to_string(PAPI_VERSION_MINOR(PAPI_VERSION)) + "." +
            std::to_string(PAPI_VERSION_REVISION(PAPI_VERSION)) + " initialised";
  // Software events count in the kernel: the default user domain reads 0 for them.
  st.domain_all = PAPI_set_domain(PAPI_DOM_ALL) == PAPI_OK;
  st.multiplex_ok = PAPI_multiplex_init() == PAPI_OK;
  st.perf_cidx = PAPI_get_component_index("perf_event");
  if (st.perf_cidx >= 0) {
    if (const PAPI_component_info_t* ci = PAPI_get_component_info(st.perf_cidx)) {
      if (ci->disabled)
        st.perf_disabled = ci->disabled_reason[0] ? ci->disabled_reason : "disabled";
    }
    st.hw_counters = std::max(0, PAPI_num_cmp_hwctrs(st.perf_cidx));
  } else {
    st.perf_disabled = "not compiled into this PAPI";
  }
  return st;
}

int create_attached_set(int cidx, pid_t tid, int* set, const char** step) {
  *step = "PAPI_create_eventset";
  int r = PAPI_create_eventset(set);
  if (r != PAPI_OK) {
    *set = PAPI_NULL;
    return r;
  }
  *step = "PAPI_assign_eventset_component";
  if ((r = PAPI_assign_eventset_component(*set, cidx)) != PAPI_OK) return r;
  *step = "PAPI_attach";
  return PAPI_attach(*set, static_cast<unsigned long>(tid));
}

void destroy_set(int* set) {
  if (*set == PAPI_NULL) return;
  PAPI_cleanup_eventset(*set);
  PAPI_destroy_eventset(set);
}

Tried try_papi(const PapiState& st, const std::string& name) {
  Tried t{name, false, ""};
  if (!st.ok) {
    t.reason = st.init;
    return t;
  }
  // First whether the event exists, then the same steps as ThreadCounters::open_papi on this
  // thread: an event that adds but cannot be attached to a thread is of no use to us. (Seen on
  // a KVM guest with PAPI 7.0: the perf_event component is enabled and adds
  // perf::CONTEXT-SWITCHES, yet PAPI_attach answers "Event does not exist" for every event; the
  // kernel back end then counts them.)
  int set = PAPI_NULL;
  int r = PAPI_create_eventset(&set);
  if (r == PAPI_OK) r = PAPI_add_named_event(set, name.c_str());
  destroy_set(&set);
  std::string prefix;
  if (r == PAPI_OK) {
    const char* step = "";
    r = create_attached_set(st.perf_cidx, this_tid(), &set, &step);
    if (r == PAPI_OK) {
      step = "PAPI_add_named_event";
      r = PAPI_add_named_event(set, name.c_str());
    }
    destroy_set(&set);
    prefix = std::string("adds, but ") + step + ": ";
  }
  if (r == PAPI_OK) {
    t.ok = true;
  } else {
    t.reason = prefix + papi_error(r);
    if (!st.perf_disabled.empty())
      t.reason += " [PAPI perf_event component: " + st.perf_disabled + "]";
  }
  return t;
}

}  // namespace schedlab::counters
