// openmp's registry entry (scheduler_entry.hpp); without OpenMP in the build, the reason it is
// missing.
#include "entry_params.hpp"
#include "scheduler_entry.hpp"
#if SCHEDLAB_WITH_OPENMP
#include "openmp/openmp.hpp"
#endif

namespace schedlab {

std::vector<SchedulerEntry> scheduler_entries_openmp() {
  SchedulerEntry e{"openmp", "GCC's libgomp: spawn = omp task, join = taskwait, one parallel region of --threads threads per run",
                   {pin_param(kPinByDefault), thread_stack_param()}, {}};
  e.rank = 60;
  e.peer = true;
  // libgomp tells nothing of its queues: the tasks, their threads and where they ran.
  e.counters = counter_mask({Counter::tasks_spawned, Counter::tasks_executed, Counter::migrations,
                             Counter::threads_created});
#if SCHEDLAB_WITH_OPENMP
  e.make = [](unsigned threads, const ParamValues& p) {
    return make_openmp(threads, chosen(p, "pin", kOnOff), static_cast<std::size_t>(param_int(p, "thread-stack")));
  };
  e.validate = [](unsigned, const ParamValues&) {
    if (std::string why = openmp_thread_stack_conflict(); !why.empty()) throw ParamError(why);
  };
  // The reason is the same for both: an OpenMP task can wait only in taskwait or taskyield.
  e.cannot_wait_locks = e.cannot_wait_channels =
      "openmp cannot park a task (an OpenMP task waits only in taskwait or taskyield, so a task waiting for a "
      "channel or a mutex would hold its thread, or with one thread wait for ever)";
#else
  e.missing = "this build has no OpenMP (SCHEDLAB_WITH_OPENMP=OFF)";
#endif
  return {e};
}

}  // namespace schedlab
