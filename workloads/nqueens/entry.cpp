// nqueens' registry entry (workload_entry.hpp): one of the field's standard task benchmarks
// (docs/workloads.md, "The field's benchmarks").
#include "entry_params.hpp"
#include "nqueens/nqueens.hpp"
#include "workload_entry.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_nqueens() {
  WorkloadEntry e{"nqueens", "N-queens: one task per legal placement of the next queen, joined; counts the solutions",
                  {integer("n", NqueensParams{}.n, 1, kNqueensMaxN, "the board is n x n (14: the field's size)")},
                  [](const ParamValues& p) { return make_nqueens(NqueensParams{static_cast<int>(param_int(p, "n"))}); }};
  e.rank = 90;
  e.go_twin = true;
  e.test_params = {{{"n", "7"}}, {{"n", "3"}}};
  e.gbench_defaults = {{"n", "8"}};
  return {e};
}

}  // namespace schedlab
