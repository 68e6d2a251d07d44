// recurse's registry entry (workload_entry.hpp).
#include "entry_params.hpp"
#include "recurse/recurse.hpp"
#include "workload_entry.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_recurse() {
  const RecurseParams recurse;
  WorkloadEntry e{"recurse", "--tasks tasks, each recursing --depth calls deep with a 256-byte frame per call: meets "
                  "the stack limits on purpose (a --depth past --stack-size / 256 overflows a fiber stack)",
                  {task_count_param(static_cast<std::int64_t>(recurse.tasks), 10000, "tasks, each recursing --depth calls"),
                   integer("depth", static_cast<std::int64_t>(recurse.depth), 0, 100000,
                           "calls deep each task recurses, 256 bytes of stack each")},
                  [](const ParamValues& p) { return make_recurse(RecurseParams{param_u64(p, "tasks"), param_u64(p, "depth")}); }};
  e.rank = 70;
  e.test_params = {{{"tasks", "4"}, {"depth", "50"}}};
  return {e};
}

}  // namespace schedlab
