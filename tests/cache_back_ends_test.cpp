// The cache back ends that need no PMU: the per-core LRU model (exact counts on hand-made
// footprints), the footprint log (ids, order, nothing recorded when off), the model on real
// workloads, the geometry rules Valgrind imposes, reading callgrind's dump, and --counters.
// The simulator itself is exercised end to end by tests/cli/sim_test.sh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "counters/cache_geometry.hpp"
#include "counters/cache_model.hpp"
#include "counters/hw_counters.hpp"
#include "counters/sim.hpp"
#include "footprint.hpp"
#include "measure.hpp"
#include "metadata.hpp"
#include "params.hpp"
#include "registry.hpp"

namespace schedlab {
namespace {

// 4 KiB, 4 ways of 64-byte lines: 16 sets, 64 lines.
const CacheGeometry kSmall{4096, 4, 64};
constexpr std::uint64_t kLines = 4096 / 64;

Footprint sweep(unsigned worker, std::uint64_t base, std::uint64_t bytes, unsigned passes, bool writes,
                std::uint64_t order) {
  Footprint f;
  f.order = order;
  f.worker = worker;
  f.passes = passes;
  f.writes = writes;
  f.base = base;
  f.row_bytes = bytes;
  f.stride = bytes;
  f.rows = 1;
  return f;
}

TEST(CacheModel, ARegionThatFitsMissesOnceWhateverThePasses) {
  EXPECT_EQ(replay_misses({sweep(0, 0, 4096, 7, true, 0)}, 1, kSmall), kLines);
  // Sweeping it again later: all hits.
  EXPECT_EQ(replay_misses({sweep(0, 0, 4096, 1, true, 0), sweep(0, 0, 4096, 3, false, 1)}, 1, kSmall), kLines);
}

TEST(CacheModel, ASweepLargerThanTheCacheMissesEveryLineOfEveryPass) {
  // LRU and a sequential sweep of twice the cache: each line is evicted before it comes back.
  EXPECT_EQ(replay_misses({sweep(0, 0, 2 * 4096, 3, false, 0)}, 1, kSmall), 3 * 2 * kLines);
}

TEST(CacheModel, LeastRecentlyUsedWayIsEvictedWithinASet) {
  // Five lines of one set (addresses a set count of lines apart) in a 4-way cache.
  const std::uint64_t stride = kSmall.sets() * kSmall.line;
  std::vector<Footprint> record;
  std::uint64_t order = 0;
  for (std::uint64_t i : {0, 1, 2, 3}) record.push_back(sweep(0, i * stride, 64, 1, false, order++));
  record.push_back(sweep(0, 0, 64, 1, false, order++));           // hit: line 0 becomes most recent
  record.push_back(sweep(0, 4 * stride, 64, 1, false, order++));  // miss: evicts line 1, the LRU
  record.push_back(sweep(0, 0, 64, 1, false, order++));           // hit
  record.push_back(sweep(0, 1 * stride, 64, 1, false, order++));  // miss: it was evicted
  EXPECT_EQ(replay_misses(record, 1, kSmall), 4u + 1u + 1u);
}

TEST(CacheModel, AWriteInvalidatesTheOtherWorkersCopies) {
  const std::vector<Footprint> record = {
      sweep(0, 0, 1024, 1, true, 0),   // worker 0 writes 16 lines: 16 misses
      sweep(1, 0, 1024, 1, false, 1),  // worker 1 reads them: 16 misses (its own cache)
      sweep(0, 0, 1024, 1, false, 2),  // worker 0 reads: hits (a read invalidates nothing)
      sweep(1, 0, 1024, 1, true, 3),   // worker 1 writes: hits, and invalidates worker 0's copies
      sweep(0, 0, 1024, 1, false, 4),  // worker 0 reads: 16 misses
  };
  EXPECT_EQ(replay_misses(record, 2, kSmall), 16u * 3);
  // The same record on one worker misses only the first time.
  std::vector<Footprint> one = record;
  for (Footprint& f : one) f.worker = 0;
  EXPECT_EQ(replay_misses(one, 1, kSmall), 16u);
}

TEST(CacheModel, StridedRowsTouchOnlyTheirOwnLines) {
  Footprint block = sweep(0, 32, 128, 1, false, 0);  // 128 bytes from offset 32: 3 lines per row
  block.stride = 4096 * 4;
  block.rows = 5;
  EXPECT_EQ(replay_misses({block}, 1, CacheGeometry{1 << 20, 8, 64}), 15u);
}

TEST(FootprintLog, RecordsNothingWhenNoLogIsActive) {
  std::uint64_t data[8] = {};
  touch(data, sizeof data, 1, true);
  FootprintLog log;
  log.start();
  log.stop();
  touch(data, sizeof data, 1, true);
  EXPECT_TRUE(log.records().empty());
  EXPECT_EQ(log.workers(), 0u);
}

TEST(FootprintLog, EveryThreadIsOneWorkerAndEveryRecordHasItsOwnOrder) {
  constexpr int kThreads = 4, kEach = 1000;
  std::vector<std::uint64_t> data(64);
  FootprintLog log;
  for (int run = 0; run < 2; ++run) {  // a second run starts from nothing
    log.start();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&data, t] {
        for (int i = 0; i < kEach; ++i) touch(&data[static_cast<std::size_t>(t)], 8, 1, false);
      });
    }
    for (auto& t : threads) t.join();
    log.stop();
    const std::vector<Footprint> record = log.records();
    ASSERT_EQ(record.size(), static_cast<std::size_t>(kThreads * kEach));
    EXPECT_EQ(log.workers(), static_cast<unsigned>(kThreads));
    std::set<std::uintptr_t> bases_of_worker[kThreads];
    for (std::size_t i = 0; i < record.size(); ++i) {
      EXPECT_EQ(record[i].order, i);  // sorted, no gap, no duplicate
      ASSERT_LT(record[i].worker, static_cast<std::uint32_t>(kThreads));
      bases_of_worker[record[i].worker].insert(record[i].base);
    }
    for (const auto& bases : bases_of_worker) EXPECT_EQ(bases.size(), 1u);  // one thread per id
  }
}

// The model on locality at 1 worker, against the count worked out by hand. Units: A = the array
// in lines, L = the cache in lines, the array 4 L, leaves L / 32, one pass per node. Every
// scheduler pays the initialisation and the two levels above L (regions of 4 L and 2 L): 3 A.
// LIFO (steal-half) runs a parent's second child right after it, on the half it swept last,
// which still fits: below L nothing misses again, and only the first child of each L-sized
// pair misses: + 2 L = A / 2. FIFO (central) sweeps the whole array between a parent and its
// child: every level below 2 L misses its first pass, 6 levels of A. So 3.5 A against 9 A.
TEST(CacheModel, LocalityAtOneWorkerMatchesTheCountByHand) {
  const CacheGeometry l2{64 * 1024, 8, 64};
  const double lines = 256.0 * 1024 / 64;  // A
  const WorkloadEntry& entry = find_workload("locality");
  const ParamValues params = resolve_params(entry.params, {{"bytes", "256K"}, {"leaf", "2K"}, {"passes", "1"}}, "locality");
  for (const auto& [scheduler, expected] : {std::pair{"steal-half", 3.5 * lines}, std::pair{"central", 9.0 * lines}}) {
    SCOPED_TRACE(scheduler);
    auto workload = entry.make(params);
    workload->prepare();
    InProcessSubject subject(make_scheduler(scheduler, 1), scheduler, scheduler, Watchers{nullptr, nullptr, nullptr, l2});
    const Measurement m = subject.measure(*workload, false);
    ASSERT_TRUE(m.model_l2_misses.has_value());
    // The array need not start on a line: each region may touch one line more than by hand.
    EXPECT_NEAR(static_cast<double>(*m.model_l2_misses), expected, expected * 0.02);
    workload->cleanup();
  }
}

// A walk visits every line of its region once, in an order with no stride a prefetcher could
// follow: for every size and seed, a bijection, and consecutive lines mostly far apart.
TEST(Walk, EveryLineOnceInNoPrefetchableOrder) {
  for (std::uint64_t lines : {1ull, 2ull, 8ull, 1024ull, 1ull << 16}) {
    for (std::uint64_t seed : {0ull, 1ull, 0xDEADBEEFCAFEull}) {
      SCOPED_TRACE(std::to_string(lines) + " lines, seed " + std::to_string(seed));
      std::vector<bool> seen(lines);
      std::uint64_t adjacent = 0, previous = 0;
      for (std::uint64_t k = 0; k < lines; ++k) {
        const std::uint64_t line = walk_line(seed, lines, k);
        ASSERT_LT(line, lines);
        ASSERT_FALSE(seen[line]) << "line " << line << " visited twice";
        seen[line] = true;
        if (k > 0 && (line == previous + 1 || line + 1 == previous)) ++adjacent;
        previous = line;
      }
      if (lines >= 1024) {
        EXPECT_LT(adjacent, lines / 50) << "a walk should rarely step to a neighbouring line";
      }
    }
  }
  EXPECT_NE(walk_line(1, 1024, 0), walk_line(2, 1024, 0)) << "the seed changes the order";
}

// The model replays a walk line by line in its order: a region that fits misses each line once,
// and again not at all. After a sweep of twice the cache, a second sweep misses every line
// (LRU evicts each line just before its reuse), while a walk over the same region hits the lines
// of the sweep's tail it reaches before they are evicted. Every pass of one walk keeps its order,
// so a walk repeated over twice the cache misses every line too.
TEST(CacheModel, ReplaysAWalkInItsOrder) {
  const CacheGeometry cache{64 * 1024, 8, 64};  // 1024 lines
  std::vector<std::uint64_t> region(2 * 64 * 1024 / 8 + 8);
  const auto base = (reinterpret_cast<std::uintptr_t>(region.data()) + 63) / 64 * 64;
  auto walk = [&](std::uint64_t bytes, unsigned passes) {
    Footprint f;
    f.passes = passes;
    f.walked = true;
    f.base = base;
    f.row_bytes = f.stride = bytes;
    f.rows = 1;
    f.walk_seed = 42;
    return f;
  };
  auto sweep = [&](std::uint64_t bytes) {
    Footprint f = walk(bytes, 1);
    f.walked = false;
    return f;
  };
  EXPECT_EQ(replay_misses({walk(32 * 1024, 3)}, 1, cache), 512u);
  EXPECT_EQ(replay_misses({sweep(128 * 1024), sweep(128 * 1024)}, 1, cache), 4096u);
  const std::uint64_t after_sweep = replay_misses({sweep(128 * 1024), walk(128 * 1024, 1)}, 1, cache);
  EXPECT_LT(after_sweep, 4096u - 100) << "the walk reaches some of the sweep's cached tail first";
  EXPECT_GT(after_sweep, 2048u + 1024) << "but loses most of it to its own misses";
  EXPECT_EQ(replay_misses({walk(128 * 1024, 2)}, 1, cache), 4096u);
}

TEST(CacheModel, WorkloadsWithoutAFootprintLeaveTheCellEmpty) {
  const WorkloadEntry& entry = find_workload("fib");
  auto workload = entry.make(resolve_params(entry.params, {{"n", "10"}}, "fib"));
  InProcessSubject subject(make_scheduler("steal-half", 2), "fib", "steal-half",
                           Watchers{nullptr, nullptr, nullptr, CacheGeometry{1 << 20, 8, 64}});
  EXPECT_FALSE(subject.measure(*workload, false).model_l2_misses.has_value());
}

TEST(CacheModel, AThreadPerTaskIsNotACorePerWorker) {
  const WorkloadEntry& entry = find_workload("locality");
  auto workload = entry.make(resolve_params(entry.params, {{"bytes", "64K"}, {"leaf", "8K"}}, "locality"));
  workload->prepare();
  const Watchers model{nullptr, nullptr, nullptr, CacheGeometry{1 << 20, 8, 64}};
  InProcessSubject os_threads(make_scheduler("os-threads", 2), "os-threads", "os-threads", model);
  EXPECT_FALSE(os_threads.measure(*workload, false).model_l2_misses.has_value());
  InProcessSubject steal_half(make_scheduler("steal-half", 2), "steal-half", "steal-half", model);
  EXPECT_TRUE(steal_half.measure(*workload, false).model_l2_misses.has_value());
  workload->cleanup();
}

TEST(CacheGeometry, ParsesWhatValgrindAcceptsAndRefusesTheRest) {
  const CacheGeometry g = parse_geometry("1M,8,64", "--sim-ll");
  EXPECT_EQ(g.text(), "1048576,8,64");
  EXPECT_EQ(g.sets(), 2048u);
  EXPECT_EQ(parse_geometry("49152,12,64", "--sim-l1").sets(), 64u);  // 48 KiB, 12 ways: fine
  for (const char* bad : {"1M,8", "1M,8,64,1", "x,8,64", "1M,0,64", "1M,8,8", "1M,8,96", "1000,8,64", "3M,8,64"}) {
    SCOPED_TRACE(bad);
    try {
      (void)parse_geometry(bad, "--sim-ll");
      ADD_FAILURE() << "accepted";
    } catch (const ParamError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("--sim-ll ") + bad + ": ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("use SIZE,ASSOC,LINE"), std::string::npos) << e.what();
    }
  }
}

TEST(CacheGeometry, OverridesReplaceTheMachinesCaches) {
  const SimGeometry g = resolve_sim_geometry("8K,4,64", "64K,8,64");
  EXPECT_EQ(g.d1.text(), "8192,4,64");
  EXPECT_EQ(g.ll.text(), "65536,8,64");
  EXPECT_EQ(g.d1_from, "--sim-l1");
  EXPECT_EQ(g.ll_from, "--sim-ll");
  EXPECT_TRUE(geometry_problem(g.i1).empty());
}

TEST(SimCounts, ReadsTheRegionDumpsTotals) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("schedlab-sim-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "callgrind.out").string();
  {
    std::ofstream f(out + ".1");
    // As callgrind 3.19 writes it: `summary:` keeps other threads' costs from before the zeroing
    // and is not read; `totals:` leaves out trailing zero events (DLmw here).
    f << "# callgrind format\nversion: 1\nevents: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n"
         "summary: 999 9 9 9 9 9 9 9 9\nfn=(1) f\n3 1 2\ntotals: 118631 17488 16978 29 16524 44 29 7\n";
  }
  const SimCounts c = read_region_counts(out);
  EXPECT_EQ(c.instructions, 118631u);
  EXPECT_EQ(c.l1d_misses, 16524u + 44u);
  EXPECT_EQ(c.ll_misses, 7u);
  EXPECT_THROW((void)read_region_counts((dir / "missing").string()), std::runtime_error);
  std::filesystem::remove_all(dir);
}

TEST(CounterSelection, SimAndModelAreBackEndsBesideTheEvents) {
  const CounterSelection only = parse_counters("sim");
  EXPECT_TRUE(only.simulated);
  EXPECT_FALSE(only.modelled);
  EXPECT_TRUE(only.events.empty());
  const CounterSelection mixed = parse_counters("sim, model,sw");
  EXPECT_TRUE(mixed.simulated && mixed.modelled);
  EXPECT_EQ(mixed.events, parse_counter_selection("sw"));
  EXPECT_EQ(parse_counters("default").events.size(), hw_events().size());
  EXPECT_THROW((void)parse_counters("sim,nope"), ParamError);
}

// Where the caches come from: sysfs, else CPUID, each checked; an implausible description (a
// Firecracker guest's CPUID: an L3 of 508 MiB with associativity 0) is unknown, and the next
// source is tried.
TEST(CacheDescription, AnImplausibleDescriptionIsPassedOverForTheNextSource) {
  const CacheInfo sysfs_l2{2 << 20, 16, 64, "sysfs (cpu0 index2)"};
  const CacheInfo cpuid_l2{1 << 20, 8, 64, "CPUID (sysconf)"};
  EXPECT_EQ(choose_cache({sysfs_l2, cpuid_l2}, 2)->from, "sysfs (cpu0 index2)");
  EXPECT_EQ(choose_cache({std::nullopt, cpuid_l2}, 2)->from, "CPUID (sysconf)");
  CacheInfo no_ways = sysfs_l2;
  no_ways.ways = 0;
  EXPECT_EQ(choose_cache({no_ways, cpuid_l2}, 2)->from, "CPUID (sysconf)");
  std::string why;
  const CacheInfo firecracker_l3{std::size_t{508} << 20, 0, 64, "CPUID (sysconf)"};
  EXPECT_FALSE(choose_cache({std::nullopt, firecracker_l3}, 3, &why));
  EXPECT_EQ(why, "sysfs: no description; CPUID: associativity 0 (unknown)");
  // This project's own VM: a real 260 MiB L3 of 20 ways is plausible.
  EXPECT_EQ(implausible_cache({std::size_t{266240} << 10, 20, 64, ""}, 3), "");
  EXPECT_NE(implausible_cache({48 << 10, 12, 0, ""}, 1), "");
  EXPECT_NE(implausible_cache({48 << 10, 12, 48, ""}, 1), "") << "a line of 48 bytes";
  EXPECT_NE(implausible_cache({50000, 12, 64, ""}, 1), "") << "no whole number of sets";
  EXPECT_NE(implausible_cache({2 << 20, 8, 64, ""}, 1), "") << "an L1 of 2 MiB";
  EXPECT_NE(implausible_cache({0, 8, 64, ""}, 2), "");
  EXPECT_EQ(implausible_cache({1 << 20, 16, 64, ""}, 2), "");
}

}  // namespace
}  // namespace schedlab
