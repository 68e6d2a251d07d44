// What the runtime does when something goes wrong or blocks: a lost wake-up is reported as a
// deadlock instead of a hang (and a woken thread the kernel has not run yet is not taken for a
// lost one), a fiber stack overflow names the fix, a library that gives up on its threads ends
// the run as a resource failure, and a blocking call hands the processor off under steal-half
// (and does not under central).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "api.hpp"
#include "diagnostics.hpp"
#include "registry.hpp"
#include "runtime/policy_runtime.hpp"
#include "runtime/task_list.hpp"

namespace schedlab {
namespace {

// One FIFO queue, like central, except that it forgets the first task that becomes runnable
// again after a suspension: the lost wake-up a buggy scheduler would have.
class LosingPolicy final : public Policy {
 public:
  void on_worker_added(Worker& w) override { w.proc = w.index(); }
  void submit_new(Task& t, Worker*) override { push(t); }
  void submit_ready(Task& t, Worker*) override {
    if (!lost_.exchange(true)) return;  // dropped on the floor
    push(t);
  }
  Task* next(Worker& w) override {
    std::unique_lock lock(mutex_);
    while (queue_.empty()) {
      if (stopping_) return nullptr;
      w.idle_begin();
      cv_.wait(lock);
      w.idle_end();
    }
    return queue_.pop_front();
  }
  void shutdown() override {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    cv_.notify_all();
  }

 private:
  void push(Task& t) {
    std::lock_guard lock(mutex_);
    queue_.push_back(t);
    cv_.notify_one();
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  TaskList queue_;
  bool stopping_ = false;
  std::atomic<bool> lost_{false};
};

// The deadlocked run leaks the tasks nobody can resume, so it runs in a child process (a death
// test) that exits with the message instead of tripping the leak checker.
TEST(Deadlock, LostWakeUpIsReportedNotHung) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        RuntimeConfig config;
        config.threads = 2;
        PolicyRuntime<LosingPolicy> runtime(std::make_unique<LosingPolicy>(), config);
        try {
          runtime.run([] {
            auto child = spawn([] {
              std::this_thread::sleep_for(std::chrono::milliseconds(20));
              return 1;
            });
            (void)child.join();  // suspends; the child's wake-up of us is lost
          });
        } catch (const DeadlockError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::fflush(stderr);
          ::_exit(3);
        }
        ::_exit(0);
      },
      ::testing::ExitedWithCode(3), "deadlock: all 2 worker threads have slept.*tasks alive: 1 .0 queued.*1 suspended");
}

TEST(Deadlock, SlowBlockingCallIsNotADeadlock) {
  // 1.5 s in a blocking call with every other worker asleep: longer than the deadlock window,
  // but the blocked thread is not parked, so the run completes.
  auto sched = make_scheduler("central", 2);
  sched->run([] { blocking([] { std::this_thread::sleep_for(std::chrono::milliseconds(1500)); }); });
}

// steal-half's report says where its Ps, Ms and tasks are (Go's scheddetail), so that a lost
// wake-up can be reasoned about from the report alone. Here a task waits for the group it
// belongs to (a workload bug): it and the root wait forever, the only P is idle and its M
// sleeps on the idle list.
TEST(Deadlock, StealHalfReportSaysWhereEveryProcessorAndThreadIs) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto sched = make_scheduler("steal-half", 1);
        try {
          sched->run([] {
            WaitGroup wg;
            wg.go([&wg] { wg.wait(); });
            wg.wait();
          });
        } catch (const DeadlockError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::fflush(stderr);
          ::_exit(3);
        }
        ::_exit(0);
      },
      ::testing::ExitedWithCode(3),
      "tasks alive: 2 .0 queued.*2 suspended.*\n"
      "  M0: asleep for [0-9]+ ms, 0 tasks run\n"
      "  steal-half: global queue 0, idle Ps 1, spinning Ms 0, idle M list \\[M0\\]\n"
      "  P0: idle, runnext empty, runq 0\n"
      "  M0: P none, next_p none, blocking call's P none, on the idle M list");
}

// One FIFO queue that a worker looks at only after a nap, like a polling scheduler: each step
// of a run waits for a short sleep to end, and the worker is asleep nearly all the time.
class NappingPolicy final : public Policy {
 public:
  static constexpr std::chrono::milliseconds kNap{250};

  void on_worker_added(Worker& w) override { w.proc = w.index(); }
  void submit_new(Task& t, Worker*) override { push(t); }
  void submit_ready(Task& t, Worker*) override { push(t); }
  Task* next(Worker& w) override {
    for (;;) {
      w.idle_begin();
      std::this_thread::sleep_for(kNap);
      w.idle_end();
      std::lock_guard lock(mutex_);
      if (stopping_) return nullptr;
      if (!queue_.empty()) return queue_.pop_front();
    }
  }
  void shutdown() override {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }

 private:
  void push(Task& t) {
    std::lock_guard lock(mutex_);
    queue_.push_back(t);
  }
  std::mutex mutex_;
  TaskList queue_;
  bool stopping_ = false;
};

// Each task spawns the next and joins it: no task finishes before the innermost one has run.
int nest(int depth) {
  if (depth == 0) return 0;
  auto child = spawn([depth] { return nest(depth - 1); });
  return child.join() + 1;
}

// A chain of short sleeps is progress, not one long sleep: here the first task finishes only
// after five naps (1.25 s, longer than the deadlock window) and the worker is asleep at nearly
// every look, but each look finds it in another sleep. On an overloaded machine a hand-off
// ping-pong had this shape (each sleep a few milliseconds) and was reported as a lost wake-up.
TEST(Deadlock, AChainOfShortSleepsIsNotADeadlock) {
  RuntimeConfig config;
  config.threads = 1;
  PolicyRuntime<NappingPolicy> runtime(std::make_unique<NappingPolicy>(), config);
  int depth = -1;
  runtime.run([&] { depth = nest(4); });
  EXPECT_EQ(depth, 4);
}

#if !defined(__SANITIZE_THREAD__)  // TSan holds back a signal to a thread asleep in futex(2)
// How long the signal handler below keeps its thread from running: longer than the deadlock
// window (1 s) plus the check's 100 ms period, with room for a loaded machine.
constexpr timespec kHeld{2, 0};
std::atomic<bool> held{false};

void hold_thread(int) {
  held.store(true);
  timespec left = kHeld;
  while (::nanosleep(&left, &left) != 0) {
  }
}

// The kernel's state letter for thread `tid` of this process ('S': asleep, 'R': running).
char thread_state(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

// A worker that was woken but has not run yet is not asleep, however long the kernel keeps it
// off the CPU (on an overloaded machine, a hand-off ping-pong of such wake-ups made the check
// report a lost wake-up that was not there). Here the spare thread is held in a signal handler
// for 2 s, and then the root's blocking call hands it the only P (--handoff eager: at once): the
// root's own thread parks, the spare one has its permit but cannot run, and no task finishes for
// 2 s.
TEST(Deadlock, WokenThreadWaitingForACpuIsNotADeadlock) {
  struct sigaction hold {};
  struct sigaction before {};
  hold.sa_handler = hold_thread;
  sigemptyset(&hold.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR2, &hold, &before), 0);
  auto sched = make_scheduler("steal-half", 1, {{"max-threads", "2"}, {"handoff", "eager"}});
  sched->run([] { blocking([] {}); });  // starts the spare thread
  const std::vector<pid_t> tids = sched->worker_tids();
  ASSERT_EQ(tids.size(), 2u);
  pid_t spare = 0, resumed_on = 0;
  sched->run([&] {
    const auto me = static_cast<pid_t>(::syscall(SYS_gettid));
    spare = tids[0] == me ? tids[1] : tids[0];
    // The spare thread sleeps in stopm, listed idle (nothing else can run: the root holds the P).
    while (thread_state(spare) != 'S') std::this_thread::yield();
    ASSERT_EQ(::syscall(SYS_tgkill, ::getpid(), spare, SIGUSR2), 0);
    while (!held.load()) std::this_thread::yield();
    blocking([] {});
    resumed_on = static_cast<pid_t>(::syscall(SYS_gettid));
  });
  ::sigaction(SIGUSR2, &before, nullptr);
  EXPECT_EQ(resumed_on, spare) << "the P was not handed to the held thread: the test tested nothing";
}
#endif

// The last words the harness arms before each run: a sidecar at `path`, marked failed with the
// error and the row count.
LastWords failed_report_at(const std::string& path) {
  LastWords words;
  words.path = path;
  words.tmp = path + ".tmp";
  words.failed[0] = "{\"error\": ";
  words.failed[1] = ", \"rows\": ";
  words.failed[2] = "}\n";
  return words;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// oneTBB's worker threads start more workers; when pthread_create fails there, its exception
// escapes a TBB thread and std::terminate runs. That is the machine's limit, reported as one:
// exit 1 and the sidecar failed, not an abort.
TEST(LibraryFailures, AnEscapedThreadCreationFailureIsAResourceFailure) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string report = ::testing::TempDir() + "schedlab_terminate_report.json";
  std::remove(report.c_str());
  EXPECT_EXIT(
      {
        set_last_words(failed_report_at(report));
        install_crash_handlers();
        set_overflow_context("tbb fib(n=5 cutoff=0) threads=200");
        std::thread library_thread(
            [] { throw std::runtime_error("pthread_create has failed: Resource temporarily unavailable"); });
        library_thread.join();
      },
      ::testing::ExitedWithCode(1),
      "schedlab: error: a thread of the scheduler ran out of threads or memory while running tbb fib\\(n=5 "
      "cutoff=0\\) threads=200 \\(pthread_create has failed: Resource temporarily unavailable\\); use fewer "
      "--threads");
  EXPECT_EQ(read_text(report).rfind("{\"error\": \"a thread of the scheduler ran out of threads or memory", 0), 0u)
      << read_text(report);
  std::remove(report.c_str());
}

// Any other exception escaping a thread is a bug: it ends as the crash it is (SIGABRT).
TEST(LibraryFailures, AnyOtherEscapedExceptionStillCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        install_crash_handlers();
        std::thread t([] { throw std::logic_error("a bug"); });
        t.join();
      },
      "terminate called after throwing an instance of 'std::logic_error'");
}

// libgomp calls exit(1) when it cannot create a thread: the run in progress is marked failed with a
// line that says so; an ordinary exit, with no run in progress, writes nothing.
TEST(LibraryFailures, ExitDuringARunMarksItFailed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string report = ::testing::TempDir() + "schedlab_exit_report.json";
  std::remove(report.c_str());
  EXPECT_EXIT(
      {
        set_last_words(failed_report_at(report));
        install_crash_handlers();
        set_overflow_context("openmp fib(n=5 cutoff=0) threads=200");
        std::exit(1);
      },
      ::testing::ExitedWithCode(1),
      "schedlab: error: a library ended the process with exit\\(\\) while running openmp fib\\(n=5 cutoff=0\\) "
      "threads=200 \\(its message is above");
  EXPECT_NE(read_text(report).find("a library ended the process with exit()"), std::string::npos);
  std::remove(report.c_str());
  EXPECT_EXIT(
      {
        set_last_words(failed_report_at(report));
        install_crash_handlers();
        set_last_words({});  // the run finished: the harness cleared its last words
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(read_text(report), "");  // nothing was written: the file does not exist
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
int recurse(int depth) {
  volatile char pad[512];
  pad[0] = static_cast<char>(depth);
  return depth == 0 ? pad[0] : recurse(depth - 1) + pad[0];
}

TEST(StackOverflow, GuardPageNamesTheFix) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The report the harness arms before each run (its sidecar, marked failed) is on disk after
  // the handler's exit. The death test's child re-runs this body, so the path has no pid in it.
  const std::string report = ::testing::TempDir() + "schedlab_overflow_report.json";
  std::remove(report.c_str());
  EXPECT_EXIT(
      {
        set_last_words(failed_report_at(report));
        auto sched = make_scheduler("steal-half", 1, {{"stack-size", "16K"}});
        sched->run([] {
          auto h = spawn([] { return recurse(1 << 20); });
          (void)h.join();
        });
      },
      ::testing::ExitedWithCode(1), "stack overflow in a task.*16384 bytes.*--stack-size");
  EXPECT_EQ(read_text(report),
            "{\"error\": \"stack overflow in a task of a task on worker 0: its fiber stack of 16384 bytes hit "
            "the guard page; rerun with a larger --stack-size (e.g. --stack-size 64K)\", \"rows\": 0}\n");
  std::remove(report.c_str());
}

// Every other backend's tasks overflow a thread's own stack (tbb's and openmp's threads, an
// os-threads task thread, the calling thread under serial) or a Boost.Fiber fiber: each is
// reported with the stack that was too small and that backend's fix, not killed raw.
struct OverflowCase {
  const char* scheduler;
  unsigned threads;
  ParamValues params;
  std::string expect;  // the report's regular expression
};

std::vector<OverflowCase> overflow_cases() {
  std::vector<OverflowCase> cases{
      {"os-threads", 1, {},
       "stack overflow in a task of a task: the thread stack of 64 KiB is too small for this recursion; rerun with a "
       "larger --stack-size \\(e\\.g\\. --stack-size 256K\\)"},
      {"serial", 1, {},
       "stack overflow in a task of a task: the thread stack of 8 MiB is too small for this recursion; raise the "
       "stack limit of the shell that starts schedlab \\(e\\.g\\. ulimit -s 16384\\)"},
  };
  for (const char* peer : {"tbb", "openmp"}) {
    if (missing_from_this_build(peer)) continue;
    for (unsigned t : {1u, 2u}) {
      cases.push_back({peer, t, {{"thread-stack", "2M"}},
                       "stack overflow in a task of a task: the thread stack of 2 MiB is too small for this recursion; "
                       "rerun with a larger --thread-stack \\(e\\.g\\. --thread-stack 4M\\)"});
    }
  }
  for (const char* bf : {"boost-fiber", "boost-fiber-shared"}) {
    if (missing_from_this_build(bf)) continue;
    cases.push_back({bf, 2, {{"stack-size", "16K"}},
                     "stack overflow in a task of a task: its fiber stack of 16384 bytes hit the guard page; rerun "
                     "with a larger --stack-size \\(e\\.g\\. --stack-size 64K\\)"});
  }
  return cases;
}

// Two tasks that recurse 512 MiB deep under `c`, the sidecar armed at `report`.
void overflow_under(const OverflowCase& c, const std::string& report) {
  // serial runs on this thread, whose stack follows RLIMIT_STACK: its usual 8 MiB.
  rlimit stack{};
  if (::getrlimit(RLIMIT_STACK, &stack) != 0) ::_exit(7);
  stack.rlim_cur = 8u << 20;
  if (std::string(c.scheduler) == "serial" && ::setrlimit(RLIMIT_STACK, &stack) != 0) ::_exit(7);
  set_last_words(failed_report_at(report));
  auto sched = make_scheduler(c.scheduler, c.threads, c.params);
  sched->run([] {
    auto a = spawn([] { return recurse(1 << 20); });
    auto b = spawn([] { return recurse(1 << 20); });
    (void)a.join();
    (void)b.join();
  });
}

TEST(StackOverflow, EveryBackendNamesItsStackAndFix) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string report = ::testing::TempDir() + "schedlab_thread_overflow_report.json";
  for (const OverflowCase& c : overflow_cases()) {
    SCOPED_TRACE(std::string(c.scheduler) + " x" + std::to_string(c.threads));
    std::remove(report.c_str());
    EXPECT_EXIT(overflow_under(c, report), ::testing::ExitedWithCode(1), c.expect);
    EXPECT_EQ(read_text(report).rfind("{\"error\": \"stack overflow in a task of a task: ", 0), 0u) << read_text(report);
  }
  std::remove(report.c_str());
}
#endif

// With one worker, the root blocks 200 ms in a pipe read while four short tasks wait in its
// processor's queue. Returns how many of them finished before the read returned.
int finished_before_read_returned(const std::string& scheduler, const ParamValues& params) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  auto sched = make_scheduler(scheduler, 1, params);
  std::atomic<bool> read_returned{false};
  std::atomic<int> early{0};
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const char byte = 'x';
    EXPECT_EQ(::write(fds[1], &byte, 1), 1);
  });
  sched->run([&] {
    WaitGroup wg;
    for (int i = 0; i < 4; ++i) {
      wg.go([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a little work
        if (!read_returned.load()) early.fetch_add(1);
      });
    }
    char byte = 0;
    EXPECT_EQ(blocking([&] { return ::read(fds[0], &byte, 1); }), 1);
    read_returned.store(true);
    wg.wait();
  });
  writer.join();
  ::close(fds[0]);
  ::close(fds[1]);
  return early.load();
}

TEST(HandOff, StealHalfRunsOtherTasksWhileOneBlocks) {
  // lazy: the system monitor retakes the P once the read has lasted two of its rounds.
  EXPECT_EQ(finished_before_read_returned("steal-half", {}), 4);
  EXPECT_EQ(finished_before_read_returned("steal-half", {{"handoff", "eager"}}), 4);
}

TEST(HandOff, WithoutHandOffTheProcessorWaits) {
  EXPECT_EQ(finished_before_read_returned("central", {}), 0);
  EXPECT_EQ(finished_before_read_returned("steal-half", {{"handoff", "off"}}), 0);
}

}  // namespace
}  // namespace schedlab
