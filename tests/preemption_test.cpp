// Preemption at safe points (--preempt, runtime/preemption.hpp, steal_half/sysmon.hpp), under
// every policy of the fiber runtime, on one worker: a CPU hog that never waits keeps a
// ping-pong pair from running until it ends without preemption, and with it the pair runs
// within two time slices of the monitor. Asserted by order and by counts (which task saw what
// first, preemptions, the monitor's rounds), never by elapsed time.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "api.hpp"
#include "registry.hpp"
#include "spin.hpp"

namespace schedlab {
namespace {

// The schedulers that take --preempt: every policy of the fiber runtime (runtime_params).
std::vector<std::string> fiber_policies() {
  std::vector<std::string> out;
  for (const SchedulerEntry& s : scheduler_registry()) {
    for (const ParamSpec& p : s.params) {
      if (p.name == "preempt") out.push_back(s.name);
    }
  }
  return out;
}

// What one run of a hog beside a pair showed.
struct HogAndPair {
  bool hog_done_when_pair_started = false;  // the pinger got past the gate only after the hog ended
  bool pair_done_when_hog_ended = false;    // the hog ended because the pair had finished
  std::uint64_t rounds_before_pair = 0;     // the monitor's rounds from the hog's start to the pair's
  std::uint64_t preemptions = 0;
};

constexpr std::uint64_t kRounds = 10;  // few: under central each hand-off waits behind the hog's slice
// The hog's bound: with --preempt off it ends here (a few ms); with safepoint it never gets
// near (the pair runs within two 10 ms slices and then the hog stops), unless preemption fails.
constexpr std::uint64_t kHogItersOff = 5'000'000;
constexpr std::uint64_t kHogItersOn = 4'000'000'000;

// On one worker: the hog closes the gate the pair waits behind and spins; the pair then waits
// for the worker, which only the hog's end or its preemption gives up.
HogAndPair run_hog_and_pair(const std::string& scheduler, bool preempt) {
  auto sched = make_scheduler(scheduler, 1, {{"preempt", preempt ? "safepoint" : "off"}});
  const std::uint64_t cap = preempt ? kHogItersOn : kHogItersOff;
  HogAndPair out;
  std::atomic<bool> hog_done{false}, pair_done{false};
  std::atomic<std::uint64_t> rounds_at_hog_start{0}, rounds_at_pair_start{0};
  const CounterSet before = sched->counters();
  sched->run([&] {
    Channel<int> gate(0, "gate"), ping(0, "ping"), pong(0, "pong");
    WaitGroup wg;
    wg.go([&] {
      rounds_at_hog_start = sched->counters()[Counter::sysmon_wakeups];
      gate.close();  // the pair may go now: it is runnable from here on, behind the hog
      std::uint64_t spun = 0;
      while (spun < cap && !pair_done.load()) spun += count_up(4096);
      out.pair_done_when_hog_ended = pair_done.load();
      hog_done = true;
    });
    wg.go([&] {
      (void)gate.recv();
      out.hog_done_when_pair_started = hog_done.load();
      rounds_at_pair_start = sched->counters()[Counter::sysmon_wakeups];
      for (std::uint64_t r = 0; r < kRounds; ++r) {
        ping.send(1);
        (void)pong.recv();
      }
      pair_done = true;
    });
    wg.go([&] {
      (void)gate.recv();
      for (std::uint64_t r = 0; r < kRounds; ++r) pong.send(*ping.recv());
    });
    wg.wait();
  });
  out.rounds_before_pair = rounds_at_pair_start - rounds_at_hog_start;
  out.preemptions = (sched->counters() - before)[Counter::preemptions];
  return out;
}

class Preemption : public ::testing::TestWithParam<std::string> {};

TEST_P(Preemption, OffAHogKeepsThePairOutUntilItEnds) {
  const HogAndPair r = run_hog_and_pair(GetParam(), /*preempt=*/false);
  EXPECT_TRUE(r.hog_done_when_pair_started) << "the pair ran before the hog ended, with nothing to preempt it";
  EXPECT_FALSE(r.pair_done_when_hog_ended);
  EXPECT_EQ(r.preemptions, 0u);
}

TEST_P(Preemption, SafepointThePairRunsWithinTwoTimeSlices) {
  const HogAndPair r = run_hog_and_pair(GetParam(), /*preempt=*/true);
  EXPECT_FALSE(r.hog_done_when_pair_started) << "the hog was never preempted: it ran to its bound first";
  EXPECT_TRUE(r.pair_done_when_hog_ended) << "the pair finished while the hog still ran";
  EXPECT_GE(r.preemptions, 1u);
  // The round that first sees the hog's slice, and the next (10 ms on) marks it; a third may
  // have begun as the hog started.
  EXPECT_LE(r.rounds_before_pair, 3u) << "monitor rounds between the hog's start and the pair's";
}

INSTANTIATE_TEST_SUITE_P(FiberPolicies, Preemption, ::testing::ValuesIn(fiber_policies()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

// Go's inheritTime: a pair handing a token back and forth through runnext shares one time slice
// (schedtick does not move), so the 1-in-61 look at the global queue never comes and the tasks
// queued behind runnext never run; the monitor preempts the shared slice after 10 ms, and they
// do. Without preemption the pair would hold the processor for good (GlobalQueueStarvation in
// steal_half_test shows the global queue's side).
TEST(StealHalfPreemption, ARunnextPingPongCannotHoldItsProcessorForEver) {
  auto sched = make_scheduler("steal-half", 1);
  constexpr std::uint64_t kCap = 200'000'000;  // round trips: far more than 10 ms of them
  std::atomic<bool> stop{false};
  std::uint64_t rounds = 0;
  const CounterSet before = sched->counters();
  sched->run([&] {
    Channel<int> ping(0, "ping"), pong(0, "pong");
    WaitGroup wg;
    wg.go([&] { stop = true; });  // queued behind the pair on the same processor
    wg.go([&] {
      while (const std::optional<int> v = ping.recv()) pong.send(*v);
    });
    wg.go([&] {
      while (!stop.load() && rounds < kCap) {
        ping.send(1);
        (void)pong.recv();
        ++rounds;
      }
      ping.close();
    });
    wg.wait();
  });
  const CounterSet c = sched->counters() - before;
  EXPECT_LT(rounds, kCap) << "the queued task never ran";
  EXPECT_GE(c[Counter::preemptions], 1u);
  EXPECT_GT(c[Counter::ready_runnext], 0u) << "the pair did hand over through runnext";
}

}  // namespace
}  // namespace schedlab
