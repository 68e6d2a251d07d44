// columns.cpp: the column table (hw_events()): the CSV columns in CSV order, and for each the
// events that may fill it, tried in order by the probe: PAPI names, then "kernel:NAME".
#include "counters/columns.hpp"

#include "counters/hw_counters.hpp"

namespace schedlab {

const std::vector<HwEvent>& hw_events() {
  // Initialised on first use, whatever the order in which files' statics are initialised.
  static const std::vector<HwEvent> events = {
      {"papi_l1_dcm",
       {"PAPI_L1_DCM", "perf::L1-DCACHE-LOAD-MISSES", "kernel:L1-dcache-load-misses"},
       true,
       "level 1 data cache misses"},
      {"papi_l2_dcm", {"PAPI_L2_DCM"}, true, "level 2 data cache misses (no generic kernel event)"},
      {"papi_l3_tcm",
       {"PAPI_L3_TCM", "perf::LLC-LOAD-MISSES", "perf::CACHE-MISSES", "kernel:LLC-load-misses",
        "kernel:cache-misses"},
       true,
       "last level cache misses (fallbacks count LLC load misses, or all cache misses)"},
      {"papi_tot_ins", {"PAPI_TOT_INS", "kernel:instructions"}, true, "instructions completed"},
      {"papi_tot_cyc", {"PAPI_TOT_CYC", "kernel:cycles"}, true, "core cycles"},
      {"perf_context_switches",
       {"perf::CONTEXT-SWITCHES", "kernel:context-switches"},
       false,
       "context switches of the worker threads"},
      {"perf_cpu_migrations",
       {"perf::CPU-MIGRATIONS", "kernel:cpu-migrations"},
       false,
       "moves of a worker thread to another CPU"},
      {"perf_page_faults",
       {"perf::PAGE-FAULTS", "kernel:page-faults"},
       false,
       "page faults taken by the worker threads"},
  };
  return events;
}

}  // namespace schedlab
