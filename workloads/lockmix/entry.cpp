// lockmix's registry entry (workload_entry.hpp).
#include "entry_params.hpp"
#include "lockmix/lockmix.hpp"
#include "workload_entry.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_lockmix() {
  const LockmixParams d;
  WorkloadEntry e{"lockmix", "--tasks tasks updating shared state under one mutex --ops times each, --between increments of "
                  "their own work before each update and --hold inside it (contention: hold / (hold + between))",
                  {task_count_param(static_cast<std::int64_t>(d.tasks), 100000, "tasks sharing the mutex"),
                   integer("ops", static_cast<std::int64_t>(d.ops), 0, std::int64_t{1} << 32, "updates per task"),
                   integer("hold", static_cast<std::int64_t>(d.hold), 0, std::int64_t{1} << 32,
                           "increments inside each critical section"),
                   integer("between", static_cast<std::int64_t>(d.between), 0, std::int64_t{1} << 32,
                           "increments of a task's own work before each update")},
                  [](const ParamValues& p) {
                    return make_lockmix(LockmixParams{param_u64(p, "tasks"), param_u64(p, "ops"), param_u64(p, "hold"),
                                                      param_u64(p, "between")});
                  }};
  e.rank = 140;
  e.go_twin = true;
  e.waits = TaskWaits::locks;
  e.test_params = {{{"tasks", "4"}, {"ops", "300"}, {"hold", "50"}, {"between", "50"}},
                   {{"tasks", "3"}, {"ops", "200"}, {"hold", "0"}, {"between", "0"}}};
  e.gbench_defaults = {{"ops", "500"}};
  return {e};
}

}  // namespace schedlab
