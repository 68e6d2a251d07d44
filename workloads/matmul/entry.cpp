// matmul's registry entry (workload_entry.hpp).
#include "entry_params.hpp"
#include "matmul/matmul.hpp"
#include "workload_entry.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_matmul() {
  WorkloadEntry e{"matmul", "recursive blocked matrix multiply C = A B (8 sub-products per level, two phases of 4)",
                  {integer("dim", 512, 1, 16384, "matrix dimension, a power of two"),
                   integer("block", 64, 1, 16384, "submatrix size of a serial leaf, a power of two"),
                   choice("element", "double", {"double", "int32"},
                          "element type: double, or int32 as tzcnt/runtime-benchmarks runs it (--dim 2048 --block 32)")},
                  [](const ParamValues& p) {
                    return make_matmul(MatmulParams{param_u64(p, "dim"), param_u64(p, "block"), param_str(p, "element")});
                  }};
  e.rank = 60;
  e.test_params = {{{"dim", "64"}, {"block", "16"}}, {{"dim", "64"}, {"block", "8"}, {"element", "int32"}}};
  return {e};
}

}  // namespace schedlab
