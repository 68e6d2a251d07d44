// What the runtime does when something goes wrong or blocks: a lost wake-up is reported as a
// deadlock instead of a hang, a fiber stack overflow names the fix, and a blocking call hands
// the processor off under steal-half (and does not under central).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "api.hpp"
#include "diagnostics.hpp"
#include "registry.hpp"
#include "runtime/runtime.hpp"
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
        FiberRuntime runtime(std::make_unique<LosingPolicy>(), config);
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
        LastWords words;
        words.path = report;
        words.tmp = report + ".tmp";
        words.failed[0] = "{\"error\": ";
        words.failed[1] = ", \"rows\": ";
        words.failed[2] = "}\n";
        set_last_words(words);
        auto sched = make_scheduler("steal-half", 1, {{"stack-size", "16K"}});
        sched->run([] {
          auto h = spawn([] { return recurse(1 << 20); });
          (void)h.join();
        });
      },
      ::testing::ExitedWithCode(1), "stack overflow in a task.*16384 bytes.*--stack-size");
  std::ifstream in(report);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            "{\"error\": \"stack overflow in a task of a task on worker 0: its fiber stack of 16384 bytes hit "
            "the guard page; rerun with a larger --stack-size (e.g. --stack-size 64K)\", \"rows\": 0}\n");
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
  EXPECT_EQ(finished_before_read_returned("steal-half", {}), 4);
}

TEST(HandOff, WithoutHandOffTheProcessorWaits) {
  EXPECT_EQ(finished_before_read_returned("central", {}), 0);
  EXPECT_EQ(finished_before_read_returned("steal-half", {{"handoff", "off"}}), 0);
}

}  // namespace
}  // namespace schedlab
