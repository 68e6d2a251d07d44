// os-threads specific behaviour: the live-thread limit, pinning, group sweeping, counters.
// (The task API's semantics are checked for every scheduler by tests/scheduler_test.cpp.)
#include "os_threads/os_threads.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "api.hpp"

namespace schedlab {
namespace {

std::unique_ptr<Scheduler> make(unsigned threads, std::uint64_t max_live = 10000) {
  OsThreadsConfig c;
  c.threads = threads;
  c.max_live_threads = max_live;
  return make_os_threads(c);
}

std::uint64_t fib(int n) {
  if (n <= 2) return 1;
  auto a = spawn([n] { return fib(n - 1); });
  auto b = spawn([n] { return fib(n - 2); });
  return a.join() + b.join();
}

// Ten live threads allowed: the root and nine tasks that stay alive until released. The tenth
// spawn must be refused with the message, and nothing may hang or crash.
TEST(OsThreads, SpawnPastMaxLiveThreadsGivesTheClearError) {
  auto s = make(2, 10);
  std::atomic<bool> release{false};
  std::string what;
  std::size_t started = 0;
  s->run([&] {
    std::vector<JoinHandle<void>> handles;
    try {
      for (int i = 0; i < 50; ++i) handles.push_back(spawn([&release] { release.wait(false); }));
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    started = handles.size();
    release.store(true);
    release.notify_all();
    for (auto& h : handles) h.join();
  });
  EXPECT_EQ(what,
            "os-threads: 10 live threads reached (--max-live-threads 10); raise it or use a "
            "smaller workload (e.g. --cutoff)");
  EXPECT_EQ(started, 9u);
  const CounterSet c = s->counters();
  EXPECT_EQ(c[Counter::tasks_spawned], 10u);
  EXPECT_EQ(c[Counter::tasks_executed], 10u);
  // The scheduler is still usable (fib(4): 4 tasks and the root, 3 alive at most at once).
  std::uint64_t got = 0;
  s->run([&] { got = fib(4); });
  EXPECT_EQ(got, 3u);
}

// The same limit hit deep inside a task tree reaches Scheduler::run()'s caller as the limit's
// error (not as an "unobserved exception", not as a crash), and every thread is joined.
TEST(OsThreads, LimitInsideATreeIsRethrownByRun) {
  auto s = make(1, 8);
  std::atomic<bool> release{false};
  struct Tree {
    // Releases the waiting leaves when its frame is left by an exception, before the handles
    // (declared earlier, destroyed later) join their tasks.
    struct ReleaseOnThrow {
      std::atomic<bool>& r;
      int before = std::uncaught_exceptions();
      ~ReleaseOnThrow() {
        if (std::uncaught_exceptions() > before) {
          r.store(true);
          r.notify_all();
        }
      }
    };
    static void grow(int depth, std::atomic<bool>& release) {
      if (depth == 0) {
        release.wait(false);
        return;
      }
      std::optional<JoinHandle<void>> a, b;
      ReleaseOnThrow guard{release};
      a.emplace(spawn([depth, &release] { grow(depth - 1, release); }));
      b.emplace(spawn([depth, &release] { grow(depth - 1, release); }));
      a->join();
      b->join();
    }
  };
  try {
    s->run([&] { Tree::grow(5, release); });
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("8 live threads reached (--max-live-threads 8)"),
              std::string::npos)
        << e.what();
  }
  const CounterSet c = s->counters();
  EXPECT_EQ(c[Counter::tasks_executed], c[Counter::tasks_spawned]);
}

// A WaitGroup's spawner at the limit waits for its own earliest tasks instead of failing: a
// flat fan-out far wider than max-live-threads completes, never more than the limit alive. The
// tasks sleep so that the spawner always outruns them and really reaches the limit.
TEST(OsThreads, AGroupAtTheLimitWaitsForItsOwnTasks) {
  auto s = make(2, 8);
  constexpr int kTasks = 300;
  std::atomic<int> ran{0};
  s->run([&] {
    WaitGroup wg;
    for (int i = 0; i < kTasks; ++i) {
      wg.go([&ran] {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        ran.fetch_add(1);
      });
    }
    wg.wait();
  });
  EXPECT_EQ(ran.load(), kTasks);
  const CounterSet c = s->counters();
  EXPECT_LE(c[Counter::peak_live_tasks], 8u) << "the root and at most 7 tasks";
  EXPECT_GT(c[Counter::suspensions], 0u) << "the spawner never had to wait: the test shows nothing";
}

// A tree wider than the limit: an inner node that reaches the limit before it has started any
// child of its own has no thread of its own to wait for; it waits for any other thread to be
// joined (its cousins' leaves finish and are joined by their parents). Ten groups of ten
// sleeping leaves (111 tasks) under a limit of 30 complete.
TEST(OsThreads, AnOwnerWithNoThreadOfItsOwnWaitsForAnotherToBeJoined) {
  auto s = make(2, 30);
  std::atomic<int> leaves{0};
  s->run([&] {
    WaitGroup inner_nodes;
    for (int i = 0; i < 10; ++i) {
      inner_nodes.go([&leaves] {
        WaitGroup wg;
        for (int j = 0; j < 10; ++j) {
          wg.go([&leaves] {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            leaves.fetch_add(1);
          });
        }
        wg.wait();
      });
    }
    inner_nodes.wait();
  });
  EXPECT_EQ(leaves.load(), 100);
  EXPECT_LE(s->counters()[Counter::peak_live_tasks], 30u);
}

// Only the group's owner waits at the limit. A member spawning into its own group would find
// itself (or a sibling that waits for it) among the threads to wait for, so it gets the error.
TEST(OsThreads, AMemberSpawningIntoItsOwnGroupAtTheLimitIsRefused) {
  auto s = make(2, 4);
  std::atomic<bool> release{false};
  std::string what;
  s->run([&] {
    WaitGroup wg;
    wg.go([&] {
      try {
        // Live: the root, this member, then two children; the third is one too many.
        for (int i = 0; i < 10; ++i) wg.go([&release] { release.wait(false); });
      } catch (const std::runtime_error& e) {
        what = e.what();
      }
      release.store(true);
      release.notify_all();
    });
    wg.wait();
  });
  EXPECT_NE(what.find("4 live threads reached (--max-live-threads 4)"), std::string::npos) << what;
}

// A WaitGroup of many short tasks: finished threads are swept (joined) as go() continues, so
// the group never holds more than a bounded number of unjoined threads.
TEST(OsThreads, WaitGroupSweepsFinishedThreads) {
  for (unsigned threads : {1u, 2u}) {
    auto s = make(threads, 2000);
    constexpr int kTasks = 20000;
    std::atomic<int> ran{0};
    s->run([&] {
      WaitGroup wg;
      for (int i = 0; i < kTasks; ++i) wg.go([&ran] { ran.fetch_add(1); });
      wg.wait();
    });
    EXPECT_EQ(ran.load(), kTasks) << threads << " threads";
    EXPECT_EQ(s->counters()[Counter::threads_created], kTasks + 1u);
  }
}

TEST(OsThreads, TaskThreadsArePinnedToTheFirstThreadsCpus) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  const int allowed = CPU_COUNT(&mine);
  for (unsigned threads : {1u, 2u, 64u}) {
    auto s = make(threads);
    int root_cpus = 0, task_cpus = 0;
    s->run([&] {
      cpu_set_t set;
      sched_getaffinity(0, sizeof set, &set);
      root_cpus = CPU_COUNT(&set);
      task_cpus = spawn([] {
                    cpu_set_t inner;
                    sched_getaffinity(0, sizeof inner, &inner);
                    return CPU_COUNT(&inner);
                  }).join();
    });
    const int want = std::min<int>(static_cast<int>(threads), allowed);
    EXPECT_EQ(root_cpus, want) << threads << " threads";
    EXPECT_EQ(task_cpus, want) << threads << " threads";
    EXPECT_EQ(s->threads(), threads);
  }
}

TEST(OsThreads, UnpinnedTaskThreadsKeepTheProcessCpus) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  OsThreadsConfig c;
  c.threads = 1;
  c.pin = false;
  auto s = make_os_threads(c);
  int task_cpus = 0;
  s->run([&] {
    task_cpus = spawn([] {
                  cpu_set_t inner;
                  sched_getaffinity(0, sizeof inner, &inner);
                  return CPU_COUNT(&inner);
                }).join();
  });
  EXPECT_EQ(task_cpus, CPU_COUNT(&mine));
}

TEST(OsThreads, CountersSayWhatIsMeasured) {
  auto s = make(2);
  s->run([] { (void)fib(10); });
  const CounterSet c = s->counters();
  EXPECT_EQ(c[Counter::tasks_spawned], 108u + 1);  // 2 * fib(10) - 2 tasks, and the root
  EXPECT_EQ(c[Counter::tasks_executed], 109u);
  EXPECT_EQ(c[Counter::threads_created], 109u);
  EXPECT_TRUE(c.has(Counter::peak_live_tasks));
  EXPECT_GE(c[Counter::peak_live_tasks], 10u);  // at least the spine of the tree
  EXPECT_TRUE(c.has(Counter::steals));
  EXPECT_EQ(c[Counter::steals], 0u);
  EXPECT_TRUE(c.has(Counter::suspensions));
  EXPECT_FALSE(c.has(Counter::migrations));
  EXPECT_FALSE(c.has(Counter::parks));
  EXPECT_TRUE(s->worker_tids().empty());
}

// The kernel refusing a thread (here: mmap of its stack fails under RLIMIT_AS, so
// pthread_create returns EAGAIN) is an error that says which limits to look at, not a crash.
// Run in a child process, so that the address-space limit touches nothing else.
[[noreturn]] void spawn_under_an_address_space_limit() {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  const rlim_t vm = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
  const rlim_t room = rlim_t{5} << 29;  // 2.5 GiB: two 1 GiB thread stacks, not three
  const rlimit limit{vm + room, vm + room};
  ::setrlimit(RLIMIT_AS, &limit);
  OsThreadsConfig c;
  c.stack_size = std::size_t{1} << 30;
  auto s = make_os_threads(c);
  try {
    s->run([] {
      std::vector<JoinHandle<void>> handles;
      for (int i = 0; i < 10; ++i) handles.push_back(spawn([] {}));
    });
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(0);
  }
  std::exit(1);
}

TEST(OsThreadsDeathTest, KernelRefusingAThreadGivesTheClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(spawn_under_an_address_space_limit(), ::testing::ExitedWithCode(0),
              "os-threads: could not start a thread with [0-9]+ live threads: Resource "
              "temporarily unavailable \\(a system limit: .*\\); lower --max-live-threads "
              "below [0-9]+ or use a smaller workload");
}

TEST(OsThreads, RefusesAStackBelowTheMinimum) {
  OsThreadsConfig c;
  c.stack_size = 1024;
  EXPECT_THROW(make_os_threads(c), std::invalid_argument);
}

}  // namespace
}  // namespace schedlab
