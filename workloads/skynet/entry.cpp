// skynet's registry entry (workload_entry.hpp): one of the field's standard task benchmarks
// (docs/workloads.md, "The field's benchmarks").
#include "entry_params.hpp"
#include "workload_entry.hpp"
#include "skynet/skynet.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_skynet() {
  const SkynetParams defaults;
  WorkloadEntry e{"skynet", "the skynet microbenchmark: a 10-way tree of tasks down to --leaves, each leaf returning its index, "
                  "each parent the sum of its children's",
                  {integer("leaves", static_cast<std::int64_t>(defaults.leaves), 1, static_cast<std::int64_t>(kSkynetMaxLeaves),
                           "leaves of the tree, a power of 10 (1e6: the original; 1e8: tzcnt/runtime-benchmarks')")},
                  [](const ParamValues& p) { return make_skynet(SkynetParams{param_u64(p, "leaves")}); }};
  e.rank = 80;
  e.go_twin = true;
  e.test_params = {{{"leaves", "1000"}}, {{"leaves", "1"}}};
  e.gbench_defaults = {{"leaves", "10000"}};
  return {e};
}

}  // namespace schedlab
