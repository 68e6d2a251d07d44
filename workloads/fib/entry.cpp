// The fib shapes' registry entries (workload_entry.hpp): fib-go and fib.
#include "entry_params.hpp"
#include "fib/fib.hpp"
#include "workload_entry.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_fib() {
  auto fib_params = [](int default_n) {
    return std::vector<ParamSpec>{
        integer("n", default_n, 0, kFibMaxN, "compute fib(n)"),
        integer("cutoff", 0, 0, kFibMaxN, "calls with n <= cutoff run serially; 0: none")};
  };
  auto fib_make = [](FibShape shape) {
    return [shape](const ParamValues& p) {
      FibParams f{static_cast<int>(param_int(p, "n")), static_cast<int>(param_int(p, "cutoff"))};
      if (p.count("base") != 0) f.base = static_cast<int>(param_int(p, "base"));
      return make_fib(shape, f);
    };
  };
  std::vector<ParamSpec> fib_go_params = fib_params(27);
  fib_go_params.push_back(integer("base", kFibSeedBase, 1, kFibSeedBase,
                                  "calls with n <= base return at once: 2, the seed's fib(1) = fib(2) = 1; "
                                  "1, tzcnt's fib(n) = n below 2 (fib(2) spawns fib(1) and fib(0))"));
  WorkloadEntry go{"fib-go", "fork-join fib, goroutine shape: every call spawns fib(n-1) and fib(n-2) and joins both",
                   fib_go_params, fib_make(FibShape::go)};
  go.rank = 10;
  go.go_twin = true;
  // The seed's shape and tzcnt's (base 1), small.
  go.test_params = {{{"n", "12"}}, {{"n", "12"}, {"base", "1"}}};
  // gbench: the size the field preset gives os-threads and boost-fiber-shared.
  go.gbench_defaults = {{"n", "20"}};
  WorkloadEntry cilk{"fib", "fork-join fib, Cilk shape: spawn fib(n-1), compute fib(n-2) inline, join",
                     fib_params(30), fib_make(FibShape::cilk)};
  cilk.rank = 10;
  cilk.go_twin = true;
  cilk.test_params = {{{"n", "13"}}, {{"n", "13"}, {"cutoff", "4"}}};
  cilk.gbench_defaults = {{"n", "22"}};
  return {go, cilk};
}

}  // namespace schedlab
