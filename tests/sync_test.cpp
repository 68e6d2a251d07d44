// Channels, the mutex and yield (api.hpp, schedulers/sync/) under every scheduler that can park
// a task, at 1, 2 and 4 workers: every value delivered exactly once, Go's close rules, mutual
// exclusion, a deadlock reported and unwound instead of hung. The schedulers that cannot park
// are refused such workloads before they run (tests/cli, and Refusals below).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "api.hpp"
#include "fib/fib.hpp"
#include "registry.hpp"
#include "spin.hpp"

namespace schedlab {
namespace {

struct Case {
  std::string scheduler;
  unsigned threads;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.scheduler << " x" << c.threads; }
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.scheduler + "_x" + std::to_string(info.param.threads);
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  }
  return name;
}

// The in-process schedulers that can park a task waiting on `what`, at these thread counts.
std::vector<Case> parking(TaskWaits what, std::vector<unsigned> threads) {
  WorkloadEntry needs;
  needs.waits = what;
  std::vector<Case> out;
  for (const SchedulerEntry& s : scheduler_registry()) {
    if (s.kind != SchedulerKind::in_process || cannot_run(s, needs)) continue;
    for (unsigned t : threads) {
      if (s.single_threaded && t != 1) continue;
      out.push_back({s.name, t});
    }
  }
  return out;
}

std::unique_ptr<Scheduler> build(const Case& c) {
  ParamValues params;
#if defined(__SANITIZE_THREAD__)
  if (c.scheduler == "os-threads") params["max-live-threads"] = "4000";
#endif
  return make_scheduler(c.scheduler, c.threads, params);
}

class Channels : public ::testing::TestWithParam<Case> {};

// P producers send the numbers 0..V-1 between them, C consumers receive until the channel
// closes; every number arrives exactly once, whatever the capacity.
TEST_P(Channels, EveryValueArrivesExactlyOnce) {
  auto sched = build(GetParam());
  static constexpr std::uint32_t kValues = 3000, kProducers = 3, kConsumers = 4;
  for (std::size_t capacity : {0u, 1u, 7u}) {
    SCOPED_TRACE("capacity " + std::to_string(capacity));
    std::vector<std::atomic<std::uint32_t>> seen(kValues);
    std::atomic<std::uint32_t> received{0};
    sched->run([&] {
      Channel<std::uint32_t> ch(capacity, "values");
      WaitGroup consumers;
      for (std::uint32_t c = 0; c < kConsumers; ++c) {
        consumers.go([&] {
          while (const std::optional<std::uint32_t> v = ch.recv()) {
            seen[*v].fetch_add(1, std::memory_order_relaxed);
            received.fetch_add(1, std::memory_order_relaxed);
          }
        });
      }
      {
        WaitGroup producers;
        for (std::uint32_t p = 0; p < kProducers; ++p) {
          producers.go([&ch, p] {
            for (std::uint32_t v = p; v < kValues; v += kProducers) ch.send(v);
          });
        }
        producers.wait();
      }
      ch.close();
      consumers.wait();
    });
    EXPECT_EQ(received.load(), kValues);
    std::uint32_t wrong = 0;
    for (const auto& s : seen) wrong += s.load() != 1 ? 1 : 0;
    EXPECT_EQ(wrong, 0u) << "values received other than exactly once";
  }
}

// Go's rules: a closed channel still hands out what it buffered, then says closed (nullopt)
// to every receive; close wakes parked receivers with nullopt and parked senders with an error;
// a send on, or a close of, a closed channel is an error.
TEST_P(Channels, CloseFollowsGosRules) {
  auto sched = build(GetParam());
  std::vector<std::string> failures;
  std::mutex failures_mutex;
  auto expect = [&](bool ok, const char* what) {
    if (ok) return;
    std::lock_guard lock(failures_mutex);
    failures.emplace_back(what);
  };
  sched->run([&] {
    Channel<int> buffered(4, "buffered");
    buffered.send(1);
    buffered.send(2);
    buffered.close();
    expect(buffered.recv() == 1 && buffered.recv() == 2, "a closed channel hands out its buffer first");
    expect(!buffered.recv() && !buffered.recv(), "then every receive says closed");
    bool threw = false;
    try {
      buffered.send(3);
    } catch (const std::logic_error&) {
      threw = true;
    }
    expect(threw, "a send on a closed channel throws");
    threw = false;
    try {
      buffered.close();
    } catch (const std::logic_error&) {
      threw = true;
    }
    expect(threw, "closing a closed channel throws");

    // Receivers and a sender parked on unbuffered channels, woken by their close.
    Channel<int> empty(0, "empty"), full(0, "full");
    Channel<int> parked(3, "parked");  // each waiter says it is about to wait
    WaitGroup wg;
    for (int i = 0; i < 3; ++i) {
      wg.go([&] {
        parked.send(1);
        expect(!empty.recv(), "a receiver parked on a channel that closes gets closed");
      });
    }
    wg.go([&] {
      parked.send(1);
      bool sender_threw = false;
      try {
        full.send(9);  // nobody ever receives
      } catch (const std::logic_error&) {
        sender_threw = true;
      }
      expect(sender_threw, "a sender parked on a channel that closes throws");
    });
    for (int i = 0; i < 4; ++i) (void)parked.recv();  // all four are on their way to park
    empty.close();
    full.close();
    wg.wait();
  });
  EXPECT_TRUE(failures.empty()) << failures.front();
}

// A task that has parked (and may go on on another thread) spawns and joins as before.
TEST_P(Channels, ATaskThatParkedStillSpawnsAndJoins) {
  auto sched = build(GetParam());
  std::atomic<std::uint64_t> total{0};
  sched->run([&] {
    Channel<int> ch(0, "work");
    WaitGroup wg;
    for (int r = 0; r < 3; ++r) {
      wg.go([&] {
        while (const std::optional<int> n = ch.recv()) total.fetch_add(fib_go(*n, 0), std::memory_order_relaxed);
      });
    }
    for (int i = 0; i < 30; ++i) ch.send(8 + i % 4);
    ch.close();
    wg.wait();
  });
  std::uint64_t want = 0;
  for (int i = 0; i < 30; ++i) want += fib_reference(8 + i % 4);
  EXPECT_EQ(total.load(), want);
}

INSTANTIATE_TEST_SUITE_P(Registry, Channels, ::testing::ValuesIn(parking(TaskWaits::channels, {1, 2, 4})), case_name);

class Mutexes : public ::testing::TestWithParam<Case> {};

// Many tasks each make many read-work-write updates under one mutex: an update made while
// another task held it would be lost.
TEST_P(Mutexes, MutualExclusionUnderStress) {
  auto sched = build(GetParam());
  constexpr std::uint64_t kTasks = 12, kOps = 400;
  std::uint64_t count = 0, sum = 0;
  std::atomic<int> inside{0}, overlaps{0};
  sched->run([&] {
    Mutex m("state");
    WaitGroup wg;
    for (std::uint64_t t = 0; t < kTasks; ++t) {
      wg.go([&, t] {
        for (std::uint64_t op = 0; op < kOps; ++op) {
          (void)count_up(op % 7 * 10);
          std::lock_guard lock(m);
          if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
          const std::uint64_t c = count, s = sum;
          (void)count_up(op % 3 * 20);
          count = c + 1;
          sum = s + t;
          inside.fetch_sub(1);
        }
      });
    }
    wg.wait();
    EXPECT_TRUE(m.try_lock()) << "the mutex is free at the end";
    m.unlock();
  });
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(count, kTasks * kOps);
  EXPECT_EQ(sum, kOps * (kTasks * (kTasks - 1) / 2));
}

INSTANTIATE_TEST_SUITE_P(Registry, Mutexes, ::testing::ValuesIn(parking(TaskWaits::locks, {1, 2, 4})), case_name);

class Deadlocks : public ::testing::TestWithParam<Case> {};

// Go's "all goroutines are asleep - deadlock!": tasks parked on a channel and on mutexes that
// nothing can ever ready are reported by name, their waits abandoned so that the tasks unwind,
// and the scheduler runs again afterwards.
TEST_P(Deadlocks, AreReportedNamingEveryWaitAndUnwound) {
  auto sched = build(GetParam());
  std::string report;
  try {
    sched->run([&] {
      Channel<int> silent(0, "nobody sends");
      Mutex first("first"), second("second");
      Channel<int> a_holds(1, "a holds"), b_holds(1, "b holds");
      WaitGroup wg;
      // A lock cycle: each takes one mutex, waits until the other has its, then takes the other's.
      wg.go([&] {
        std::lock_guard a(first);
        a_holds.send(1);
        (void)b_holds.recv();
        std::lock_guard b(second);
      });
      wg.go([&] {
        std::lock_guard b(second);
        b_holds.send(1);
        (void)a_holds.recv();
        std::lock_guard a(first);
      });
      (void)silent.recv();
      wg.wait();
    });
    FAIL() << "a deadlocked run returned";
  } catch (const DeadlockError& e) {
    report = e.what();
  }
  EXPECT_NE(report.find("deadlock"), std::string::npos) << report;
  EXPECT_NE(report.find("receive from channel \"nobody sends\""), std::string::npos) << report;
  EXPECT_NE(report.find("lock of mutex \"second\""), std::string::npos) << report;
  // Abandoned, the tasks unwound: the scheduler runs the next run as usual.
  std::uint64_t got = 0;
  sched->run([&] { got = fib_go(10, 0); });
  EXPECT_EQ(got, fib_reference(10));
}

// Deadlocks take the watch's second to see: one thread count per scheduler.
INSTANTIATE_TEST_SUITE_P(Registry, Deadlocks, ::testing::ValuesIn(parking(TaskWaits::channels, {2})), case_name);

class Yields : public ::testing::TestWithParam<Case> {};

// yield() lets a task that is queued behind the caller run: the caller spins, yielding, until
// the other has run (on one worker it could not without the yield).
TEST_P(Yields, LetAQueuedTaskRun) {
  auto sched = build(GetParam());
  std::atomic<bool> ran{false};
  std::uint64_t yields = 0;
  sched->run([&] {
    WaitGroup wg;
    wg.go([&] { ran.store(true); });
    while (!ran.load() && yields < 10'000'000) {
      yield();
      ++yields;
    }
    wg.wait();
  });
  EXPECT_TRUE(ran.load());
  EXPECT_LT(yields, 10'000'000u);
  const CounterSet c = sched->counters();
  if (c.has(Counter::yields)) {
    EXPECT_GE(c[Counter::yields], yields);
  }
}

// tbb has no way back into its queue (yield does nothing), and serial no queue: a task that
// yields to let a queued one run would spin for ever there.
std::vector<Case> yielding() {
  std::vector<Case> out;
  for (const Case& c : parking(TaskWaits::channels, {1, 2})) {
    if (c.scheduler != "tbb") out.push_back(c);
  }
  return out;
}
INSTANTIATE_TEST_SUITE_P(Registry, Yields, ::testing::ValuesIn(yielding()), case_name);

// The schedulers that cannot park a task say why, and which can, for the workloads that need
// it; a direct use of a channel under them throws instead of hanging.
TEST(Refusals, SchedulersThatCannotParkSayWhy) {
  const WorkloadEntry& pingpong = find_workload("pingpong");
  const WorkloadEntry& lockmix = find_workload("lockmix");
  std::optional<std::string> serial = cannot_run(find_scheduler("serial"), pingpong);
  ASSERT_TRUE(serial.has_value());
  EXPECT_NE(serial->find("choose another scheduler (fair"), std::string::npos) << *serial;
  EXPECT_FALSE(cannot_run(find_scheduler("serial"), lockmix)) << "serial's locks are never contended";
  EXPECT_TRUE(cannot_run(find_scheduler(kElisionName), pingpong).has_value());
  EXPECT_FALSE(cannot_run(find_scheduler(kElisionName), lockmix));
  for (const char* s : {"steal-half", "fair", "central", "os-threads"}) {
    EXPECT_FALSE(cannot_run(find_scheduler(s), pingpong)) << s;
  }
  auto sched = make_scheduler("serial", 1);
  EXPECT_THROW(sched->run([] {
    Channel<int> ch;
    ch.send(1);  // nobody to receive, and no way to park
  }),
               std::logic_error);
}

}  // namespace
}  // namespace schedlab
