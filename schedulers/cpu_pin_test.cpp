// --pin on every backend: each worker thread is bound to the CPU cpu_pin.hpp's rule gives it,
// with more workers than CPUs wrapping around; off leaves every thread the process's CPUs.
#include "cpu_pin.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api.hpp"
#include "central/central.hpp"
#include "fair/fair.hpp"
#include "serial/serial.hpp"
#include "steal_half/steal_half.hpp"
#if SCHEDLAB_WITH_TBB
#include <oneapi/tbb/task_arena.h>

#include "tbb/tbb.hpp"
#endif
#if SCHEDLAB_WITH_BOOST_FIBER
#include "boost_fiber/boost_fiber.hpp"
#endif
#if SCHEDLAB_WITH_OPENMP
#include "openmp/openmp.hpp"
#endif

namespace schedlab {
namespace {

std::set<int> cpus_of(const cpu_set_t& set) {
  std::set<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.insert(cpu);
  }
  return cpus;
}

// The CPUs thread `tid` (0: the caller) may run on.
std::set<int> affinity_of(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(tid, sizeof set, &set), 0) << "tid " << tid;
  return cpus_of(set);
}

std::set<int> process_cpus() {
  const std::vector<int> allowed = allowed_cpus();
  return {allowed.begin(), allowed.end()};
}

long fib(int n) {
  if (n < 2) return n;
  auto a = spawn([n] { return fib(n - 1); });
  const long b = fib(n - 2);
  return a.join() + b;
}

TEST(CpuPin, WorkerIOnTheIthAllowedCpuWrappingAroundAndExtraThreadsOnTheWorkersCpus) {
  const std::vector<int> allowed{2, 5, 7};
  EXPECT_EQ(cpus_of(pinned_cpus(allowed, 0, 4)), (std::set<int>{2}));
  EXPECT_EQ(cpus_of(pinned_cpus(allowed, 1, 4)), (std::set<int>{5}));
  EXPECT_EQ(cpus_of(pinned_cpus(allowed, 2, 4)), (std::set<int>{7}));
  EXPECT_EQ(cpus_of(pinned_cpus(allowed, 3, 4)), (std::set<int>{2}));  // wraps around
  EXPECT_EQ(cpus_of(pinned_cpus(allowed, kAnyWorker, 2)), (std::set<int>{2, 5}));
  EXPECT_EQ(cpus_of(pinned_cpus(allowed, 4, 2)), (std::set<int>{2, 5}));  // a thread beyond the workers
  EXPECT_EQ(cpus_of(pinned_cpus(allowed, kAnyWorker, 9)), (std::set<int>{2, 5, 7}));
}

using FiberFactory = std::function<std::unique_ptr<Scheduler>(const RuntimeConfig&)>;

std::map<std::string, FiberFactory> fiber_schedulers() {
  return {{"fair", [](const RuntimeConfig& rc) { return make_fair(rc, FairConfig{}); }},
          {"central", [](const RuntimeConfig& rc) { return make_central(rc, CentralConfig{}); }},
          {"steal-half", [](const RuntimeConfig& rc) { return make_steal_half(rc, StealHalfConfig{}); }}};
}

// One more worker than CPUs: the last one wraps around onto the first CPU. The runtime is built
// (and its tids published) only once every worker is on its CPU.
TEST(CpuPin, FiberWorkersArePinnedOnePerCpuAndWrapAround) {
  const std::vector<int> allowed = allowed_cpus();
  const unsigned threads = static_cast<unsigned>(allowed.size()) + 1;
  for (const auto& [name, make] : fiber_schedulers()) {
    RuntimeConfig rc;
    rc.threads = threads;
    rc.pin = true;
    auto s = make(rc);
    const std::vector<pid_t> tids = s->worker_tids();
    ASSERT_EQ(tids.size(), threads) << name;
    for (unsigned i = 0; i < threads; ++i) {
      EXPECT_EQ(affinity_of(tids[i]), (std::set<int>{allowed[i % allowed.size()]})) << name << " worker " << i;
    }
    long value = 0;
    s->run([&] { value = fib(18); });
    EXPECT_EQ(value, 2584) << name;
  }
}

// A blocking call hands the only P to a spare thread (index 1, beyond --threads 1), which runs
// the queued task: the spare may run on the workers' CPUs, here the first allowed one.
TEST(CpuPin, StealHalfHandOffThreadsRunOnTheWorkersCpus) {
  RuntimeConfig rc;
  rc.threads = 1;
  rc.pin = true;
  StealHalfConfig c;
  c.max_threads = 4;
  auto s = make_steal_half(rc, c);
  std::atomic<bool> queued_ran{false};
  std::set<int> queued_mask;
  s->run([&] {
    WaitGroup wg;
    wg.go([&] {
      queued_mask = affinity_of(0);
      queued_ran.store(true);
    });
    blocking([&] {
      // A guard against a hang, not a timing assertion: the hand-off runs the task at once.
      for (int ms = 0; ms < 10000 && !queued_ran.load(); ++ms) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    wg.wait();
  });
  ASSERT_TRUE(queued_ran.load());
  const std::vector<pid_t> tids = s->worker_tids();
  ASSERT_GE(tids.size(), 2u) << "the blocking call handed the P to a second thread";
  const std::set<int> first{allowed_cpus().front()};
  for (std::size_t i = 0; i < tids.size(); ++i) EXPECT_EQ(affinity_of(tids[i]), first) << "worker " << i;
  EXPECT_EQ(queued_mask, first);
}

TEST(CpuPin, UnpinnedFiberWorkersMayUseEveryAllowedCpu) {
  for (const auto& [name, make] : fiber_schedulers()) {
    RuntimeConfig rc;
    rc.threads = 2;
    ASSERT_FALSE(rc.pin) << "the default is off (cpu_pin.hpp: kPinByDefault)";
    auto s = make(rc);
    for (pid_t tid : s->worker_tids()) EXPECT_EQ(affinity_of(tid), process_cpus()) << name;
  }
}

TEST(CpuPin, SerialRunsOnTheFirstAllowedCpuAndGivesTheThreadItsMaskBack) {
  const std::set<int> before = affinity_of(0);
  auto s = make_serial(/*pin=*/true);
  std::set<int> inside;
  s->run([&] { inside = affinity_of(0); });
  EXPECT_EQ(inside, (std::set<int>{allowed_cpus().front()}));
  EXPECT_EQ(affinity_of(0), before);
}

// The peers with a pool of their own: worker i (by worker_tids(), the team or thread index) on
// the i-th allowed CPU, wrapping around; the run still computes the right value; off leaves the
// threads every allowed CPU.
std::map<std::string, std::function<std::unique_ptr<Scheduler>(unsigned, bool)>> pooled_peers() {
  std::map<std::string, std::function<std::unique_ptr<Scheduler>(unsigned, bool)>> peers;
#if SCHEDLAB_WITH_BOOST_FIBER
  for (const auto& [name, algorithm] : {std::pair{"boost-fiber", BoostFiberAlgorithm::work_stealing},
                                        std::pair{"boost-fiber-shared", BoostFiberAlgorithm::shared_work}}) {
    peers[name] = [algorithm = algorithm](unsigned threads, bool pin) {
      BoostFiberConfig c;
      c.threads = threads;
      c.algorithm = algorithm;
      c.pin = pin;
      return make_boost_fiber(c);
    };
  }
#endif
#if SCHEDLAB_WITH_OPENMP
  peers["openmp"] = [](unsigned threads, bool pin) { return make_openmp(threads, pin); };
#endif
  return peers;
}

TEST(CpuPin, PooledPeersPinTheirThreadsOnePerCpuAndWrapAround) {
  const std::vector<int> allowed = allowed_cpus();
  const unsigned threads = static_cast<unsigned>(allowed.size()) + 1;
  for (const auto& [name, make] : pooled_peers()) {
    auto s = make(threads, /*pin=*/true);
    const std::vector<pid_t> tids = s->worker_tids();
    ASSERT_EQ(tids.size(), threads) << name;
    for (unsigned i = 0; i < threads; ++i) {
      EXPECT_EQ(affinity_of(tids[i]), (std::set<int>{allowed[i % allowed.size()]})) << name << " thread " << i;
    }
    long value = 0;
    s->run([&] { value = fib(15); });
    EXPECT_EQ(value, 610) << name;
    for (unsigned i = 0; i < threads; ++i) {
      EXPECT_EQ(affinity_of(tids[i]), (std::set<int>{allowed[i % allowed.size()]})) << name << " thread " << i << " after a run";
    }
    auto unpinned = make(2, /*pin=*/false);
    for (pid_t tid : unpinned->worker_tids()) EXPECT_EQ(affinity_of(tid), process_cpus()) << name;
  }
}

#if SCHEDLAB_WITH_TBB
// Every thread that ran a task was bound to its arena slot's CPU while in the arena, and the
// harness thread gets its mask back after the run.
TEST(CpuPin, TbbArenaSlotIOnTheIthAllowedCpuWrappingAround) {
  const std::vector<int> allowed = allowed_cpus();
  const std::set<int> before = affinity_of(0);
  const unsigned threads = static_cast<unsigned>(allowed.size()) + 1;
  auto s = make_tbb(threads, /*pin=*/true);
  std::mutex mutex;
  std::map<int, std::set<std::set<int>>> seen;  // arena slot -> the masks its tasks ran under
  std::function<void(int)> tree = [&](int depth) {
    {
      const int slot = tbb::this_task_arena::current_thread_index();
      const std::set<int> mask = affinity_of(0);
      std::lock_guard lock(mutex);
      seen[slot].insert(mask);
    }
    if (depth == 0) return;
    auto a = spawn([&, depth] { tree(depth - 1); });
    tree(depth - 1);
    a.join();
  };
  s->run([&] { tree(12); });
  ASSERT_FALSE(seen.empty());
  for (const auto& [slot, masks] : seen) {
    ASSERT_GE(slot, 0);
    EXPECT_EQ(masks, (std::set<std::set<int>>{{allowed[static_cast<unsigned>(slot) % allowed.size()]}}))
        << "slot " << slot;
  }
  EXPECT_EQ(affinity_of(0), before);
}
#endif

}  // namespace
}  // namespace schedlab
