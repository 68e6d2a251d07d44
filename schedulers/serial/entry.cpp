// serial's registry entry (scheduler_entry.hpp).
#include "entry_params.hpp"
#include "scheduler_entry.hpp"
#include "serial/serial.hpp"

namespace schedlab {

std::vector<SchedulerEntry> scheduler_entries_serial() {
  SchedulerEntry e{"serial", "the task API on one thread, each spawn run at once: what spawn, join and wait cost "
                   "without any scheduling (one thread)", {pin_param(kPinByDefault)},
                   [](unsigned, const ParamValues& p) { return make_serial(chosen(p, "pin", kOnOff)); }};
  e.single_threaded = true;
  e.rank = 80;
  // A lock is never contended here (each task finishes its critical section before another
  // starts), so mutex workloads run; a channel is another matter.
  e.cannot_wait_channels =
      "serial runs each task to its end inside spawn, on the spawner's stack, so a task waiting for another's send "
      "cannot let that task run (it has no way to park a task)";
  return {e};
}

}  // namespace schedlab
