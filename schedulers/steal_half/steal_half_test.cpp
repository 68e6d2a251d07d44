// Tests of steal-half's policy: overflow to the global queue, the 1-in-61 global check, Go's
// wake-ups and runnext steals, the system-call path (a call keeps its P; the system monitor
// retakes a P from a call that lasts), and the counters that show them.
#include "steal_half.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "api.hpp"
#include "runnext.hpp"

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
//     because sysmon preempts a time slice older than 10 ms, and so does steal-half (--preempt
//     safepoint, at the hop's spawn, a safe point); with --preempt off the task waits until the
//     ping-pong gives up;
//   - runnext pops counted like any other (--runnext-tick count, the ablation): the check again;
//   - the check off (global-check 0): it starves whatever the counting (the control case).
// Preemption is off but in the case that shows it: the others show what the tick does alone.
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

void run_ping_pong_against_a_returning_task(StealHalfConfig c, bool preempt, PingPong& st, CounterSet* counters) {
  c.max_threads = kOnePMaxThreads;
  RuntimeConfig rc = one_p();
  rc.preempt = preempt;
  auto s = make_steal_half(rc, c);
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
  bool preempt = false;   // --preempt safepoint: the monitor's 10 ms slice gets it run
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
  run_ping_pong_against_a_returning_task(c, sc.preempt, st, &k);
  ASSERT_TRUE(st.returned_task_ran.load());
  ASSERT_GE(st.hops_at_return.load(), 1000);
  EXPECT_GE(k[Counter::handoffs], 1u);
  EXPECT_GE(k[Counter::threads_created], 2u) << "a second thread ran the P during the call";
  if (sc.preempt) {
    // Not within 61 hops, but long before the ping-pong gives up: at the first safe point after
    // the monitor found the inherited slice 10 ms old.
    EXPECT_LT(st.hops_when_ran.load(), PingPong::kGiveUp) << sc.mechanism;
    EXPECT_GE(k[Counter::preemptions], 1u) << sc.mechanism;
    return;
  }
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
                       "runnext pops inherit the tick (Go's inheritTime), so the check never comes, and with "
                       "--preempt off nothing preempts the slice",
                       true},
        StarvationCase{"RunnextPingPongPreempted", true, true, 61,
                       "runnext pops inherit the tick, and the monitor preempts the 10 ms slice (Go's sysmon) at "
                       "the next hop's spawn, a safe point",
                       false, true},
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

// ---- Go's wake-ups and runnext steals -------------------------------------------------------

RuntimeConfig two_ps() {
  RuntimeConfig rc;
  rc.threads = 2;
  return rc;
}

using Clock = std::chrono::steady_clock;

// The kernel's id of the calling thread. Not std::this_thread::get_id(): glibc declares
// pthread_self() const, so the compiler may reuse its value across a blocking call, after which
// the task may run on another thread (docs/platform.md).
[[gnu::noinline]] pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// Spins without yielding the P (a task that runs long, as far as the scheduler knows) until
// `done` or the deadline; returns whether `done` came first.
bool spin_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > deadline) return false;
  }
  return true;
}

// Inside a task on one of two Ps: waits until the other P is idle and nobody spins (its M has
// given it up and is listed idle, so only a wake-up can bring it back).
void wait_until_the_other_p_is_idle(const Scheduler& s) {
  ASSERT_TRUE(spin_until(
      [&] {
        const auto snap = s.snapshot();
        return snap->idle_procs == 1 && snap->spinning == 0;
      },
      std::chrono::seconds(20)));
}

// Go's newproc calls wakep after every runqput, also when the new task only took runnext.
// Here the spawner's queue and runnext are empty, so the child only fills runnext, and the
// other P's M sleeps: only that wake-up can get it going. (Without the wake-up, nothing wakes it.)
TEST(StealHalfWakeups, ASpawnThatOnlyFillsRunnextWakesAnIdleProcessor) {
  for (bool steal_runnext : {true, false}) {
    SCOPED_TRACE(steal_runnext ? "--steal-runnext on" : "--steal-runnext off");
    StealHalfConfig c;
    c.steal_runnext = steal_runnext;
    auto s = make_steal_half(two_ps(), c);
    bool woke = false;
    s->run([&] {
      wait_until_the_other_p_is_idle(*s);
      const std::uint64_t before = s->counters()[Counter::unparks];
      auto child = spawn([] {});
      woke = spin_until([&] { return s->counters()[Counter::unparks] > before; }, std::chrono::seconds(20));
      child.join();
    });
    EXPECT_TRUE(woke) << "the spawn into an empty runnext woke no thread";
  }
}

// Go's runqgrab: a thief may take a victim's runnext when the victim's queue is empty, so a task
// spawned by one that then runs long does not wait for it. The spawner never yields its P here:
// the child runs only if the other P takes it from runnext.
TEST(StealHalfWakeups, AThiefTakesARunnextThatStaysUnrun) {
  auto s = make_steal_half(two_ps(), StealHalfConfig{});
  std::atomic<bool> ran{false};
  pid_t spawner = 0, runner = 0;
  bool taken = false;
  s->run([&] {
    spawner = current_tid();
    auto child = spawn([&] {
      runner = current_tid();
      ran.store(true);
    });
    taken = spin_until([&] { return ran.load(); }, std::chrono::seconds(20));
    child.join();
  });
  ASSERT_TRUE(taken) << "nobody took the spawner's runnext";
  EXPECT_NE(runner, spawner);
  EXPECT_GE(s->counters()[Counter::tasks_stolen], 1u);
}

// The control: with --steal-runnext off the other P cannot see the child, so it waits for the
// spawner (which here gives up its spin after 300 ms and joins it).
TEST(StealHalfWakeups, WithoutRunnextStealsTheChildWaitsForItsSpawner) {
  StealHalfConfig c;
  c.steal_runnext = false;
  auto s = make_steal_half(two_ps(), c);
  std::atomic<bool> ran{false};
  bool ran_early = true;
  s->run([&] {
    auto child = spawn([&] { ran.store(true); });
    ran_early = spin_until([&] { return ran.load(); }, std::chrono::milliseconds(300));
    child.join();
  });
  EXPECT_FALSE(ran_early);
  EXPECT_TRUE(ran.load());
}

// The slot's protocol in one thread: what a thief took, the owner never gets back, and the
// owner's next write tells it so and frees the slot for the next thief.
TEST(RunNext, WhatAThiefTookIsGoneForTheOwner) {
  if (!process_barrier_available()) GTEST_SKIP() << "no membarrier here: runnext is never stolen";
  struct Plain : Task {};
  Plain a, b, c;
  RunNext slot;
  EXPECT_EQ(slot.put(a), nullptr);
  EXPECT_EQ(slot.steal(&a), &a);
  EXPECT_EQ(slot.take(), nullptr) << "the thief's task";
  EXPECT_EQ(slot.put(b), nullptr) << "nothing to displace: the thief took a";
  EXPECT_EQ(slot.steal(&a), nullptr) << "a is gone";
  EXPECT_EQ(slot.put(c), &b);
  EXPECT_EQ(slot.steal(&c), &c) << "the owner's write freed the slot for the next thief";
  EXPECT_EQ(slot.put(a), nullptr);
  EXPECT_EQ(slot.take(), &a);
}

// ---- Go's system-call path (--handoff lazy) --------------------------------------------------

// The monitor's rounds an hour apart: nothing it does can interfere within a test.
SysmonTiming monitor_asleep() {
  SysmonTiming t;
  t.first_sleep_us = 3'600'000'000u;
  t.max_sleep_us = t.first_sleep_us;
  return t;
}

// Go's entersyscall and exitsyscallfast: a call keeps its P, and on return the task takes the
// same P back with one CAS: no hand-off, no wake-up, no thread switch. --handoff eager, the
// contrast, hands the P over at every call.
TEST(StealHalfSyscalls, AWarmCallKeepsItsProcessor) {
  for (HandOff mode : {HandOff::lazy, HandOff::eager}) {
    const bool lazy = mode == HandOff::lazy;
    SCOPED_TRACE(lazy ? "--handoff lazy" : "--handoff eager");
    StealHalfConfig c;
    c.handoff = mode;
    c.max_threads = 4;
    c.sysmon = monitor_asleep();
    auto s = make_steal_half(one_p(), c);
    s->run([] {});  // starts the runtime's thread before the counters are read
    const CounterSet before = s->counters();
    int same_thread = 0;
    s->run([&] {
      for (int i = 0; i < 100; ++i) {
        const pid_t thread = current_tid();
        blocking([] {});
        same_thread += current_tid() == thread;
      }
    });
    const CounterSet k = s->counters() - before;
    if (lazy) {
      EXPECT_EQ(same_thread, 100);
      EXPECT_EQ(k[Counter::handoffs], 0u);
      EXPECT_EQ(k[Counter::retakes], 0u);
      EXPECT_LE(k[Counter::unparks], 1u) << "the root's, if its thread was asleep, and no other";
      EXPECT_EQ(k[Counter::threads_created], 1u);
    } else {
      EXPECT_GE(k[Counter::handoffs], 1u);
      EXPECT_GE(k[Counter::threads_created], 2u);
    }
  }
}

// Go's sysmon and retake: a P whose call the monitor saw in two consecutive rounds is taken back
// and handed to another thread, which runs the P's queued task; the task back from its call
// finds no P free, waits in the global queue (exitsyscall0) and resumes on another thread.
TEST(StealHalfSyscalls, ACallThatOutlastsTwoRoundsLosesItsProcessorAndTheTaskResumesElsewhere) {
  StealHalfConfig c;
  c.max_threads = 4;
  auto s = make_steal_half(one_p(), c);
  std::atomic<bool> queued_started{false}, call_returned{false};
  pid_t before_call = 0, after_call = 0;
  bool queued_ran_during_call = false;
  s->run([&] {
    // Queued on this P (runnext) while the call holds it: it runs only if the P is retaken.
    auto queued = spawn([&] {
      queued_started.store(true);
      // Keeps the P busy until the returning task is in the global queue, so it finds no P free
      // (stopping at the call's return alone left a window in which the P fell idle before
      // exitsyscall looked for one, and the task took it back on its own thread).
      spin_until([&] { return call_returned.load() && s->snapshot()->global_queue > 0; },
                 std::chrono::seconds(20));
    });
    before_call = current_tid();
    blocking([&] {
      queued_ran_during_call = spin_until([&] { return queued_started.load(); }, std::chrono::seconds(20));
      call_returned.store(true);
    });
    after_call = current_tid();
    queued.join();
  });
  ASSERT_TRUE(queued_ran_during_call) << "the monitor never retook the P";
  EXPECT_NE(after_call, before_call) << "the task took its P back instead of resuming elsewhere";
  const CounterSet k = s->counters();
  EXPECT_GE(k[Counter::retakes], 1u);
  EXPECT_GE(k[Counter::handoffs], k[Counter::retakes]);
  EXPECT_GE(k[Counter::sysmon_wakeups], 2u) << "a retake needs two rounds";
}

// The monitor sleeps deeply until the first call: a run without calls never wakes it.
TEST(StealHalfSyscalls, RunsWithoutCallsNeverWakeTheMonitor) {
  auto s = make_steal_half(two_ps(), StealHalfConfig{});
  s->run([] {
    WaitGroup wg;
    for (int i = 0; i < 1000; ++i) wg.go([] {});
  });
  const CounterSet k = s->counters();
  EXPECT_EQ(k[Counter::sysmon_wakeups], 0u);
  EXPECT_EQ(k[Counter::retakes], 0u);
}

// Calls that end before the monitor's first round (warm reads) send it straight back to its
// longest rounds, where Go's monitor stays while a program runs; it does not double its way up
// from its first sleep, a round at a time. Rounds start at 1 ms here, not Go's 20 µs, so that no
// empty call, however slow a sanitizer makes it, spans the two rounds a retake needs (under TSan
// one did at 20 µs, and the retake's reset to the first sleep ran 62 rounds). With the longest
// round an hour, the 400 calls below, 200 µs apart (~80 ms), see one round, or a few if rounds
// catch calls in flight; a backoff doubling from 1 ms would run six (1, 3, 7, 15, 31, 63 ms).
TEST(StealHalfSyscalls, CallsThatEndUnseenSendTheMonitorBackToItsLongestRounds) {
  StealHalfConfig c;
  c.sysmon.first_sleep_us = 1'000;
  c.sysmon.max_sleep_us = 3'600'000'000u;
  auto s = make_steal_half(one_p(), c);
  s->run([] {
    for (int i = 0; i < 400; ++i) {
      blocking([] {});
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  });
  const CounterSet k = s->counters();
  EXPECT_GE(k[Counter::sysmon_wakeups], 1u) << "the first call woke the monitor";
  EXPECT_LE(k[Counter::sysmon_wakeups], 3u);
  EXPECT_EQ(k[Counter::retakes], 0u);
}

}  // namespace
}  // namespace schedlab
