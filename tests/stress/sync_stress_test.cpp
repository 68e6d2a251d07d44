// Stress: no lost wake-up between a sender and a receiver that is parking on another worker
// (the race Go's channel lock and gopark's unlock-after-save close), and none between an unlock
// and a lock that is parking, under every scheduler that can park a task, at 2 workers. A lost
// wake-up leaves every task asleep: the deadlock watch then fails the run with its report, and
// the watchdog turns anything else that hangs into a failure. Random delays between operations
// move the windows around; TSan checks the hand-over of the values.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "api.hpp"
#include "registry.hpp"
#include "stress_util.hpp"

namespace schedlab {
namespace {

using stress::Rng;
using stress::scaled;
using stress::Watchdog;

std::vector<std::string> parking_schedulers() {
  WorkloadEntry needs;
  needs.waits = TaskWaits::channels;
  std::vector<std::string> out;
  for (const SchedulerEntry& s : scheduler_registry()) {
    if (s.kind == SchedulerKind::in_process && !s.single_threaded && !cannot_run(s, needs)) out.push_back(s.name);
  }
  return out;
}

class SyncStress : public ::testing::TestWithParam<std::string> {};

// Pairs hand tokens back and forth through unbuffered channels (every hand-off meets a partner
// that is parked, parking, or about to arrive), and producers and consumers share a channel of
// one slot; both on two workers, with random delays.
TEST_P(SyncStress, SendersAndParkingReceiversNeverLoseAWakeUp) {
  Watchdog dog("sync stress " + GetParam());
  auto sched = make_scheduler(GetParam(), 2);
  const std::uint64_t rounds = scaled(100'000, 200);
  constexpr int kPairs = 3;
  for (int rep = 0; rep < 3; ++rep) {
    dog.phase(GetParam() + " rep " + std::to_string(rep));
    std::vector<std::uint64_t> tokens(kPairs, 0);
    std::atomic<std::uint64_t> through{0};
    sched->run([&] {
      std::vector<std::unique_ptr<Channel<std::uint64_t>>> chans;
      for (int i = 0; i < 2 * kPairs; ++i) chans.push_back(std::make_unique<Channel<std::uint64_t>>(0));
      Channel<std::uint64_t> shared(1, "one slot");
      WaitGroup wg;
      for (int p = 0; p < kPairs; ++p) {
        Channel<std::uint64_t>& ping = *chans[2 * p];
        Channel<std::uint64_t>& pong = *chans[2 * p + 1];
        wg.go([&ping, &pong, rounds, seed = rep * 100 + p] {
          Rng rng(seed);
          for (std::uint64_t r = 0; r < rounds; ++r) {
            const std::uint64_t v = *ping.recv();
            stress::random_delay(rng);
            pong.send(v + 1);
          }
        });
        wg.go([&ping, &pong, &tokens, p, rounds, seed = rep * 100 + p + 50] {
          Rng rng(seed);
          std::uint64_t token = 0;
          for (std::uint64_t r = 0; r < rounds; ++r) {
            ping.send(token + 1);
            stress::random_delay(rng);
            token = *pong.recv();
          }
          tokens[p] = token;
        });
      }
      WaitGroup consumers;
      for (int c = 0; c < 2; ++c) {
        consumers.go([&shared, &through] {
          while (const std::optional<std::uint64_t> v = shared.recv()) through.fetch_add(*v, std::memory_order_relaxed);
        });
      }
      {
        WaitGroup producers;
        for (int p = 0; p < 2; ++p) {
          producers.go([&shared, rounds, p] {
            for (std::uint64_t r = 0; r < rounds; ++r) shared.send(1 + (r + p) % 2);
          });
        }
      }
      shared.close();
      consumers.wait();
      wg.wait();
    });
    for (int p = 0; p < kPairs; ++p) ASSERT_EQ(tokens[p], 2 * rounds) << "pair " << p;
    std::uint64_t want = 0;
    for (int p = 0; p < 2; ++p)
      for (std::uint64_t r = 0; r < rounds; ++r) want += 1 + (r + p) % 2;
    ASSERT_EQ(through.load(), want);
  }
}

// Tasks contend for one mutex with short critical sections and random delays: every unlock
// that leaves a parked waiter must ready it (Go's woken flag and semaphore handshake).
TEST_P(SyncStress, UnlocksNeverLoseAParkingLocker) {
  Watchdog dog("mutex stress " + GetParam());
  auto sched = make_scheduler(GetParam(), 2);
  const std::uint64_t ops = scaled(50'000, 100);
  constexpr int kTasks = 6;
  std::uint64_t count = 0;
  sched->run([&] {
    Mutex m("contended");
    WaitGroup wg;
    for (int t = 0; t < kTasks; ++t) {
      wg.go([&m, &count, ops, t] {
        Rng rng(t);
        for (std::uint64_t i = 0; i < ops; ++i) {
          stress::random_delay(rng);
          std::lock_guard lock(m);
          ++count;
        }
      });
    }
  });
  EXPECT_EQ(count, kTasks * ops);
}

INSTANTIATE_TEST_SUITE_P(Registry, SyncStress, ::testing::ValuesIn(parking_schedulers()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace schedlab
