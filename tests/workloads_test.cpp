// Every workload, at small sizes, under every in-process scheduler at 1 and 2 workers: the
// result checks pass and every task runs exactly once. Plus the workloads' own errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "iomix/iomix.hpp"
#include "locality_sizing.hpp"
#include "registry.hpp"
#include "spin.hpp"

namespace schedlab {
namespace {

struct Small {
  std::string workload;
  ParamValues params;
};

std::vector<Small> small_workloads() {
  return {{"loops", {{"tasks", "200"}, {"iters", "1000"}, {"skew", "uniform"}}},
          {"loops", {{"tasks", "200"}, {"iters", "1000"}, {"skew", "one-long"}}},
          {"loops", {{"tasks", "200"}, {"iters", "1000"}, {"skew", "heavy-tail"}, {"seed", "7"}}},
          {"iomix", {{"tasks", "8"}, {"iters", "1000"}, {"files", "3"}, {"file-size", "10000"}, {"reads-per-task", "2"}}},
          {"iomix", {{"tasks", "8"}, {"iters", "1000"}, {"files", "2"}, {"file-size", "4K"}, {"cold", "on"}}},
          {"locality", {{"bytes", "1M"}, {"leaf", "64K"}, {"passes", "2"}}},
          {"locality", {{"bytes", "1M"}, {"leaf", "64K"}, {"passes", "2"}, {"access", "chase"}}},
          {"matmul", {{"dim", "64"}, {"block", "16"}}},
          {"recurse", {{"tasks", "4"}, {"depth", "50"}}}};
}

TEST(Workloads, EveryWorkloadUnderEveryScheduler) {
  for (const SchedulerEntry& s : scheduler_registry()) {
    if (s.external) continue;
    for (unsigned threads : {1u, 2u}) {
      if (s.single_threaded && threads != 1) continue;
      auto sched = make_scheduler(s.name, threads);
      for (const Small& w : small_workloads()) {
        SCOPED_TRACE(s.name + " x" + std::to_string(threads) + " " + w.workload);
        const WorkloadEntry& entry = find_workload(w.workload);
        auto work = entry.make(resolve_params(entry.params, w.params, w.workload));
        work->prepare();
        for (int rep = 0; rep < 2; ++rep) {
          const CounterSet before = sched->counters();
          sched->run([&] { work->run(); });
          const CounterSet delta = sched->counters() - before;
          EXPECT_EQ(work->check(), "");
          ASSERT_TRUE(work->expected_tasks().has_value());
          if (delta.has(Counter::tasks_executed)) {
            EXPECT_EQ(delta[Counter::tasks_executed], *work->expected_tasks() + 1);
          }
        }
        work->cleanup();
      }
    }
  }
}

TEST(Workloads, CountUpReturnsItsCount) {
  // Whether the loop really runs (is not folded into its result) cannot be seen from its value:
  // that is the benchmark's check, time growing linearly with the count (README, loops).
  EXPECT_EQ(count_up(12345), 12345u);
  EXPECT_EQ(count_up(0), 0u);
}

TEST(Workloads, IomixMissingFileIsAClearError) {
  IomixParams p;
  p.tasks = 4;
  p.iters = 100;
  p.files = 2;
  p.file_size = 100;
  auto work = make_iomix(p);
  work->prepare();
  const auto args = work->external_args();
  ASSERT_EQ(args.size(), 1u);
  const std::string dir = args[0].second;
  std::filesystem::remove(dir + "/file-1");
  auto sched = make_scheduler("steal-half", 2);
  try {
    sched->run([&] { work->run(); });
    FAIL() << "a missing file did not fail the run";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read " + dir + "/file-1: No such file or directory"), std::string::npos)
        << e.what();
  }
  work->cleanup();
  EXPECT_FALSE(std::filesystem::exists(dir)) << "cleanup left " << dir;
}

// round_robin_ratio by hand. one-long, 200 tasks of 1000: task 0 runs 100,000, the rest 1000
// (W = 299,000). On 2 processors the static split puts task 0 and 99 short ones on processor
// 0 (199,000) and the best is W/2 = 149,500: 199,000 / 149,500. On 4: 100,000 + 49,000 =
// 149,000 over max(74,750, 100,000). Uniform splits evenly: 1. One processor: 1.
TEST(Workloads, LoopsRoundRobinRatioByHand) {
  const WorkloadEntry& loops = find_workload("loops");
  auto one_long = loops.make(resolve_params(loops.params, {{"tasks", "200"}, {"iters", "1000"}, {"skew", "one-long"}}, "loops"));
  EXPECT_DOUBLE_EQ(*one_long->round_robin_ratio(2), 199000.0 / 149500.0);
  EXPECT_DOUBLE_EQ(*one_long->round_robin_ratio(4), 149000.0 / 100000.0);
  EXPECT_DOUBLE_EQ(*one_long->round_robin_ratio(1), 1.0);
  auto last = loops.make(resolve_params(loops.params, {{"tasks", "200"}, {"iters", "1000"}, {"skew", "one-long"}, {"long-at", "last"}}, "loops"));
  EXPECT_DOUBLE_EQ(*last->round_robin_ratio(2), 199000.0 / 149500.0) << "task 199 and 99 others on processor 1";
  auto uniform = loops.make(resolve_params(loops.params, {{"tasks", "200"}, {"iters", "1000"}}, "loops"));
  EXPECT_DOUBLE_EQ(*uniform->round_robin_ratio(2), 1.0);
  EXPECT_DOUBLE_EQ(*uniform->round_robin_ratio(3), 67000.0 / (200000.0 / 3)) << "200 = 67 + 67 + 66 tasks";
  const WorkloadEntry& fib = find_workload("fib");
  EXPECT_FALSE(fib.make(resolve_params(fib.params, {{"n", "10"}}, "fib"))->round_robin_ratio(2).has_value());
}

// --bytes and --leaf at auto: sized from this machine's caches by the access pattern
// (locality_sizing.hpp); a number given stays; the settled values are what a case says it ran.
TEST(Workloads, LocalitySizesItselfFromTheCachesUnlessTold) {
  const WorkloadEntry& locality = find_workload("locality");
  const LocalitySizing& sizes = locality_sizing();
  ASSERT_TRUE(locality.settle);
  ParamValues chase = resolve_params(locality.params, {{"access", "chase"}}, "locality");
  EXPECT_EQ(chase.at("bytes"), "auto");
  locality.settle(chase);
  EXPECT_EQ(chase.at("bytes"), std::to_string(sizes.chase_bytes));
  EXPECT_EQ(chase.at("leaf"), std::to_string(sizes.chase_leaf));
  EXPECT_GE(sizes.chase_bytes, 2 * sizes.last_level.bytes) << "a level of the tree cannot stay in the last level";
  EXPECT_LE(sizes.chase_leaf, sizes.l2.bytes / 2) << "a leaf fits in L2 with room to spare";
  EXPECT_FALSE(sizes.last_level.from.empty());
  ParamValues sweep = resolve_params(locality.params, {{"leaf", "4K"}}, "locality");
  locality.settle(sweep);
  EXPECT_EQ(sweep.at("bytes"), std::to_string(sizes.sweep_bytes));
  EXPECT_EQ(sweep.at("leaf"), "4096");
  EXPECT_THROW((void)resolve_params(locality.params, {{"bytes", "automatic"}}, "locality"), ParamError);
}

TEST(Workloads, BadSizesAreRefused) {
  const WorkloadEntry& locality = find_workload("locality");
  EXPECT_THROW(locality.make(resolve_params(locality.params, {{"bytes", "3000"}}, "locality")), std::invalid_argument);
  const WorkloadEntry& matmul = find_workload("matmul");
  EXPECT_THROW(matmul.make(resolve_params(matmul.params, {{"dim", "100"}}, "matmul")), std::invalid_argument);
  const WorkloadEntry& iomix = find_workload("iomix");
  EXPECT_THROW(iomix.make(resolve_params(iomix.params, {{"io-dir", "/nonexistent/dir"}}, "iomix")),
               std::invalid_argument);
}

}  // namespace
}  // namespace schedlab
