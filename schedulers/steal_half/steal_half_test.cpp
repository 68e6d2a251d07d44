// Tests of steal-half's policy: overflow to the global queue, the 1-in-61 global check, the
// hand-off of the P around blocking calls, and the counters that show them.
#include "steal_half.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "api.hpp"

namespace schedlab {
namespace {

RuntimeConfig one_p() {
  RuntimeConfig rc;
  rc.threads = 1;
  return rc;
}

constexpr unsigned kOnePMaxThreads = 8;  // the P's own thread plus spares for its hand-offs

TEST(StealHalf, FullLocalQueueMovesHalfToTheGlobalQueue) {
  StealHalfConfig c;
  c.capacity = 4;
  c.max_threads = kOnePMaxThreads;
  auto s = make_steal_half(one_p(), c);
  std::atomic<int> ran{0};
  s->run([&] {
    WaitGroup wg;
    for (int i = 0; i < 100; ++i) wg.go([&] { ran.fetch_add(1); });
    wg.wait();
  });
  EXPECT_EQ(ran.load(), 100);
  const CounterSet k = s->counters();
  EXPECT_GT(k[Counter::overflows], 0u);
  // Each overflow moves half of a full queue (2) plus the new task.
  EXPECT_EQ(k[Counter::global_pushes], 1 + 3 * k[Counter::overflows]) << "the root counts once";
  EXPECT_EQ(k[Counter::global_pops], k[Counter::global_pushes]);
}

// Go's scenario: a task comes back from a blocking call to find its P taken by another thread,
// so it waits in the global queue, while on the only P two tasks keep respawning each other.
// What gets the waiting task run depends on how the schedule tick is counted:
//   - the successor goes through the local queue (--runnext off): every pop ticks, and every
//     61st tick the P looks at the global queue first, so it runs within about 61 hops;
//   - the successor goes through runnext and, as in Go (inheritTime), inherits its readier's
//     tick: the ping-pong never ticks and the global check never comes. Go gets the task run
//     because sysmon preempts a time slice older than 10 ms; schedlab has no preemption, so the
//     task waits until the ping-pong gives up;
//   - runnext pops counted like any other (--runnext-tick count, the ablation): the check again;
//   - the check off (global-check 0): it starves whatever the counting (the control case).
struct PingPong {
  static constexpr long kGiveUp = 3'000'000;
  std::atomic<long> hops{0};
  std::atomic<long> hops_at_return{-1};
  std::atomic<long> hops_at_enqueue{-1};  // the first hop after the return that saw it queued
  std::atomic<long> hops_when_ran{-1};
  const Scheduler* sched = nullptr;
  std::atomic<bool> returned_task_ran{false};
};

void hop(WaitGroup& wg, PingPong& st) {
  if (st.returned_task_ran.load(std::memory_order_relaxed)) return;
  const long h = st.hops.fetch_add(1, std::memory_order_relaxed);
  if (h >= PingPong::kGiveUp) return;
  // Other tasks pass through the global queue before the call returns (the root, the P's
  // hand-off); only the returning task can be there after.
  if (st.hops_at_return.load() >= 0 && st.hops_at_enqueue.load(std::memory_order_relaxed) < 0 &&
      st.sched->snapshot()->global_queue > 0)
    st.hops_at_enqueue.store(h);
  wg.go([&wg, &st] { hop(wg, st); });
}

void run_ping_pong_against_a_returning_task(StealHalfConfig c, PingPong& st, CounterSet* counters) {
  c.max_threads = kOnePMaxThreads;
  auto s = make_steal_half(one_p(), c);
  st.sched = s.get();
  s->run([&] {
    WaitGroup wg;
    wg.go([&] {
      wg.go([&] { hop(wg, st); });  // starts the ping-pong on this P
      blocking([&] {
        // The P is handed to a new thread, which runs the ping-pong meanwhile.
        while (st.hops.load() < 1000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        st.hops_at_return.store(st.hops.load());
      });
      // Here only after the global queue was looked at.
      st.hops_when_ran.store(st.hops.load());
      st.returned_task_ran.store(true);
    });
    wg.wait();
  });
  *counters = s->counters();
}

struct StarvationCase {
  const char* name;
  bool runnext;
  bool runnext_inherits_tick;
  std::uint32_t global_check;
  const char* mechanism;  // what gets the returning task run (or why nothing does)
  bool starves;
};

class GlobalQueueStarvation : public ::testing::TestWithParam<StarvationCase> {};

TEST_P(GlobalQueueStarvation, SaysWhichMechanismRunsTheReturningTask) {
  const StarvationCase& sc = GetParam();
  StealHalfConfig c;
  c.runnext = sc.runnext;
  c.runnext_inherits_tick = sc.runnext_inherits_tick;
  c.global_check = sc.global_check;
  PingPong st;
  CounterSet k;
  run_ping_pong_against_a_returning_task(c, st, &k);
  ASSERT_TRUE(st.returned_task_ran.load());
  ASSERT_GE(st.hops_at_return.load(), 1000);
  EXPECT_GE(k[Counter::handoffs], 1u);
  EXPECT_GE(k[Counter::threads_created], 2u) << "a second thread ran the P during the call";
  if (sc.starves) {
    EXPECT_GE(st.hops_when_ran.load(), PingPong::kGiveUp)
        << sc.mechanism << ": the task should have waited for the ping-pong to give up";
    return;
  }
  // Counted from the first hop that found the task in the global queue, not from when the call
  // returned: the returning thread may be descheduled for a long time before it queues the task.
  // No hop saw it queued when the P's next schedule took it straight away.
  const long enqueued = st.hops_at_enqueue.load();
  const long waited = enqueued < 0 ? 0 : st.hops_when_ran.load() - enqueued;
  EXPECT_LE(waited, static_cast<long>(sc.global_check)) << sc.mechanism << ": hops the task waited";
}

INSTANTIATE_TEST_SUITE_P(
    StealHalf, GlobalQueueStarvation,
    ::testing::Values(
        StarvationCase{"LocalQueuePingPong", false, true, 61,
                       "every pop from the local queue ticks; the 1-in-61 global check runs it", false},
        StarvationCase{"RunnextPingPongInheritsTheTick", true, true, 61,
                       "runnext pops inherit the tick (Go's inheritTime), so the check never comes; Go's "
                       "sysmon would preempt the 10 ms slice, schedlab has no preemption",
                       true},
        StarvationCase{"RunnextPingPongCountingEveryPop", true, false, 61,
                       "runnext pops counted (--runnext-tick count): the 1-in-61 global check runs it", false},
        StarvationCase{"NoGlobalCheck", false, true, 0,
                       "no global check (the control): nothing looks at the global queue", true}),
    [](const auto& info) { return std::string(info.param.name); });

// The first task to start holds its P until some task has run on another thread; the other 63
// wait in that P's queues, so only a steal by the second P can release it. Deterministic under
// any load: without stealing the holder gives up after 20 s and the test fails.
TEST(StealHalf, StealsMoveWorkBetweenProcessors) {
  RuntimeConfig rc;
  rc.threads = 2;
  StealHalfConfig c;
  c.max_threads = rc.threads;
  auto s = make_steal_half(rc, c);
  std::atomic<bool> holder_claimed{false};
  std::atomic<std::thread::id> holder_thread{};
  std::atomic<bool> ran_elsewhere{false};
  std::atomic<int> ran{0};
  s->run([&] {
    WaitGroup wg;
    for (int i = 0; i < 64; ++i) {
      wg.go([&] {
        const auto me = std::this_thread::get_id();
        if (!holder_claimed.exchange(true)) {
          holder_thread.store(me);
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (!ran_elsewhere.load() && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
          }
        } else if (me != holder_thread.load()) {
          ran_elsewhere.store(true);
        }
        ran.fetch_add(1);
      });
    }
    wg.wait();
  });
  EXPECT_EQ(ran.load(), 64);
  EXPECT_TRUE(ran_elsewhere.load()) << "no task ran on the second P";
  const CounterSet k = s->counters();
  EXPECT_GT(k[Counter::steals], 0u);
  EXPECT_LE(k[Counter::steals], k[Counter::steal_attempts]);
  EXPECT_GE(k[Counter::tasks_stolen], k[Counter::steals]);
}

}  // namespace
}  // namespace schedlab
