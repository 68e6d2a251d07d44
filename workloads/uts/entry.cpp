// uts' registry entry (workload_entry.hpp): one of the field's standard task benchmarks
// (docs/workloads.md, "The field's benchmarks").
#include "entry_params.hpp"
#include "workload_entry.hpp"
#include "uts/uts.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_uts() {
  std::vector<std::string> trees;
  for (const UtsTree& t : uts_trees()) trees.emplace_back(t.name);
  WorkloadEntry e{"uts", "Unbalanced Tree Search: a tree drawn from a SHA-1 random stream, one task per node, counted",
                  {choice("tree", "T1", trees,
                          "UTS's named trees (T1, T3: ~4M nodes; T1L, T3L: ~100M) or the small mini- trees (tests, quick preset)")},
                  [](const ParamValues& p) { return make_uts(param_str(p, "tree")); }};
  e.rank = 100;
  e.go_twin = true;
  e.test_params = {{{"tree", "mini-T1"}}, {{"tree", "mini-T3"}}};
  e.gbench_defaults = {{"tree", "mini-T1"}};
  return {e};
}

}  // namespace schedlab
