// Resource failures of the fiber runtime: a worker thread that cannot be started, a fiber that
// cannot be had inside a run (the memory budget; a stack mmap fails the same way). Each must
// end in one ResourceError naming the resource and the fix, never in std::terminate, and a
// failed runtime must be destroyable without hanging and must refuse further runs.
//
// Each runs in a child process (a death test): a failed run leaks the tasks it abandoned, by
// design, and the budget and the address-space limit are process-wide.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "../api.hpp"
#include "../central/central.hpp"
#include "../memory_budget.hpp"
#include "../steal_half/steal_half.hpp"
#include "runtime.hpp"

namespace schedlab {
namespace {

// A fork-join tree of 2^depth leaves: under a FIFO order nearly all of it is alive at once, each
// suspended parent holding a fiber.
int tree(int depth) {
  if (depth == 0) return 1;
  auto left = spawn([depth] { return tree(depth - 1); });
  auto right = spawn([depth] { return tree(depth - 1); });
  return left.join() + right.join();
}

// Runs `body`, which must throw ResourceError: prints its message and exits 3. Any other way
// out exits 4 (no error) or is a crash.
template <class Body>
[[noreturn]] void expect_resource_error(Body body) {
  try {
    body();
  } catch (const ResourceError& e) {
    std::fprintf(stderr, "ResourceError: %s\n", e.what());
    std::fflush(stderr);
    ::_exit(3);
  }
  ::_exit(4);
}

// The fiber that would pass the budget fails the run from inside a task: the worker abandons
// the task, every worker leaves, the run throws. The runtime refuses another run and is
// destroyed without waiting on a stuck thread.
void run_over_budget(std::unique_ptr<Scheduler> sched) {
  try {
    sched->run([] { (void)tree(14); });
  } catch (const ResourceError& first) {
    try {
      sched->run([] {});
    } catch (const ResourceError& again) {
      if (std::string(again.what()) != first.what()) ::_exit(5);
      sched.reset();  // must not hang
      throw;
    }
    ::_exit(6);  // a failed runtime ran again
  }
}

TEST(ResourceFailure, MemoryBudgetStopsACentralRun) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(expect_resource_error([] {
                set_memory_budget(kMinMemoryBudget);
                RuntimeConfig config;
                config.threads = 2;
                run_over_budget(make_central(config, CentralConfig{}));
              }),
              ::testing::ExitedWithCode(3),
              "ResourceError: memory budget of 1 MiB \\(--memory-budget\\) reached: [0-9]+ live tasks and [0-9]+ "
              "fiber stacks hold about [0-9]+ MiB; .*LIFO order.*--memory-budget");
}

TEST(ResourceFailure, MemoryBudgetStopsAStealHalfRunWithFifoQueues) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(expect_resource_error([] {
                set_memory_budget(kMinMemoryBudget);
                RuntimeConfig config;
                config.threads = 2;
                StealHalfConfig policy;
                policy.order = LocalOrder::fifo;
                policy.runnext = false;
                run_over_budget(make_steal_half(config, policy));
              }),
              ::testing::ExitedWithCode(3), "ResourceError: memory budget of 1 MiB");
}

TEST(ResourceFailure, WithinTheBudgetNothingChanges) {
  RuntimeConfig config;
  config.threads = 2;
  auto sched = make_central(config, CentralConfig{});
  int leaves = 0;
  sched->run([&] { leaves = tree(10); });
  EXPECT_EQ(leaves, 1024);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// Bytes of address space this process maps now.
std::uint64_t mapped_bytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t pages = 0;
  in >> pages;
  return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

TEST(ResourceFailure, AThreadThatCannotStartIsNamedNotATerminate) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // 64 MiB more address space than mapped now: a few 8 MiB thread stacks, not 64.
  EXPECT_EXIT(expect_resource_error([] {
                const rlim_t limit = mapped_bytes() + (rlim_t{64} << 20);
                const rlimit as{limit, limit};
                if (::setrlimit(RLIMIT_AS, &as) != 0) ::_exit(7);
                RuntimeConfig config;
                config.threads = 64;
                (void)make_central(config, CentralConfig{});
              }),
              ::testing::ExitedWithCode(3),
              "ResourceError: cannot start worker thread [0-9]+ of 64: Resource temporarily unavailable "
              "\\(EAGAIN\\).*use fewer --threads or raise the limit");
}
#endif

}  // namespace
}  // namespace schedlab
