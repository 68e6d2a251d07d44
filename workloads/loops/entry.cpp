// loops' registry entry (workload_entry.hpp).
#include <limits>

#include "entry_params.hpp"
#include "loops/loops.hpp"
#include "workload_entry.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_loops() {
  const LoopsParams loops;
  WorkloadEntry e{"loops", "one parent spawns --tasks increment loops of --iters each and waits on a wait group",
                  {task_count_param(static_cast<std::int64_t>(loops.tasks), 10000000, "loop tasks the parent spawns"),
                   integer("iters", static_cast<std::int64_t>(loops.iters), 0, std::int64_t{1} << 40,
                           "increments per task (before skew)"),
                   choice("skew", loops.skew, {"uniform", "one-long", "heavy-tail"},
                          "task lengths: all equal; one task as long as half of the uniform total; Pareto(1.5) with mean ~iters"),
                   choice("long-at", loops.long_at, {"first", "last", "random"},
                          "one-long: the long task is spawned first, last, or at a position drawn from --seed"),
                   integer("seed", static_cast<std::int64_t>(loops.seed), 0, std::numeric_limits<std::int64_t>::max(),
                           "seed of the heavy-tail lengths and of one-long's random position")},
                  [](const ParamValues& p) {
                    return make_loops(LoopsParams{param_u64(p, "tasks"), param_u64(p, "iters"), param_str(p, "skew"),
                                                  param_u64(p, "seed"), param_str(p, "long-at")});
                  }};
  e.rank = 20;
  e.go_twin = true;
  e.test_params = {{{"tasks", "200"}, {"iters", "1000"}, {"skew", "uniform"}},
                   {{"tasks", "200"}, {"iters", "1000"}, {"skew", "one-long"}},
                   {{"tasks", "200"}, {"iters", "1000"}, {"skew", "heavy-tail"}, {"seed", "7"}}};
  return {e};
}

}  // namespace schedlab
