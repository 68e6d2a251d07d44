// pingpong's registry entry (workload_entry.hpp).
#include "entry_params.hpp"
#include "pingpong/pingpong.hpp"
#include "workload_entry.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_pingpong() {
  const PingPongParams d;
  WorkloadEntry e{"pingpong", "pairs of tasks passing a token through unbuffered channels --rounds times, beside --hog CPU-bound "
                  "tasks that never wait (Go's BenchmarkPingPongHog)",
                  {integer("pairs", static_cast<std::int64_t>(d.pairs), 1, 100000, "pairs of tasks, each passing its own token"),
                   integer("rounds", static_cast<std::int64_t>(d.rounds), 0, std::int64_t{1} << 40,
                           "round trips per pair (two hand-offs each)"),
                   integer("hog", static_cast<std::int64_t>(d.hog), 0, 10000,
                           "CPU-bound tasks beside the pairs, spinning until every pair is done (Go's BenchmarkPingPongHog: 1)"),
                   integer("hog-iters", static_cast<std::int64_t>(d.hog_iters), 1, std::int64_t{1} << 50,
                           "the most increments a hog spins, so that it ends where nothing preempts it (--preempt off)")},
                  [](const ParamValues& p) {
                    return make_pingpong(PingPongParams{param_u64(p, "pairs"), param_u64(p, "rounds"), param_u64(p, "hog"),
                                                        param_u64(p, "hog-iters")});
                  }};
  e.rank = 110;
  e.go_twin = true;
  e.waits = TaskWaits::channels;
  e.test_params = {{{"pairs", "2"}, {"rounds", "300"}},
                   {{"pairs", "1"}, {"rounds", "100"}, {"hog", "1"}, {"hog-iters", "200000"}}};
  e.gbench_defaults = {{"rounds", "1000"}};
  return {e};
}

}  // namespace schedlab
