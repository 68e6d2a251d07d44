// tbb's registry entry (scheduler_entry.hpp); without oneTBB in the build, the reason it is
// missing.
#include "entry_params.hpp"
#include "scheduler_entry.hpp"
#if SCHEDLAB_WITH_TBB
#include "tbb/tbb.hpp"
#endif

namespace schedlab {

std::vector<SchedulerEntry> scheduler_entries_tbb() {
  SchedulerEntry e{"tbb", "oneTBB: task_arena with --threads slots, task_group per join",
                   {pin_param(kPinByDefault), thread_stack_param()}, {}};
  e.rank = 40;
  e.peer = true;
  // oneTBB tells its tasks' runs and threads, not its queues or steals; the channel and mutex
  // parks are this backend's own waits (tbb.cpp).
  e.counters = counter_mask({Counter::tasks_spawned, Counter::tasks_executed, Counter::migrations,
                             Counter::threads_created, Counter::chan_parks, Counter::chan_readies,
                             Counter::lock_parks, Counter::lock_readies});
#if SCHEDLAB_WITH_TBB
  e.make = [](unsigned threads, const ParamValues& p) {
    return make_tbb(threads, chosen(p, "pin", kOnOff), static_cast<std::size_t>(param_int(p, "thread-stack")));
  };
#else
  e.missing = "this build has no oneTBB (SCHEDLAB_WITH_TBB=OFF)";
#endif
  return {e};
}

}  // namespace schedlab
