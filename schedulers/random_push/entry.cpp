// random-push's registry entry (scheduler_entry.hpp): the guide's worked example.
#include "entry_params.hpp"
#include "random_push/random_push.hpp"
#include "scheduler_entry.hpp"

namespace schedlab {

std::vector<SchedulerEntry> scheduler_entries_random_push() {
  SchedulerEntry e{"random-push", "example (docs/extending.md), not a seed design: each new task onto a random worker's "
                   "queue, workers run their own queue and steal one task when it is empty, sleep when nothing is found",
                   runtime_params(),
                   [](unsigned threads, const ParamValues& p) { return make_random_push(runtime_config(threads, p)); }};
  e.example = true;
  return {e};
}

}  // namespace schedlab
