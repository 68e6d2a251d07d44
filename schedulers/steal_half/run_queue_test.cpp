// Tests of steal-half's LocalRunQueue: order, bounds, batch sizes, and exactly-once delivery
// with an owner racing several thieves.
#include "run_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace schedlab {
namespace {

std::vector<Task> make_tasks(std::size_t n) { return std::vector<Task>(n); }

TEST(LocalRunQueue, RejectsCapacitiesThatAreNotPowersOfTwo) {
  EXPECT_THROW(LocalRunQueue(0), std::invalid_argument);
  EXPECT_THROW(LocalRunQueue(1), std::invalid_argument);
  EXPECT_THROW(LocalRunQueue(3), std::invalid_argument);
  EXPECT_THROW(LocalRunQueue(LocalRunQueue::kMaxCapacity * 2), std::invalid_argument);
  EXPECT_NO_THROW(LocalRunQueue(2));
  EXPECT_NO_THROW(LocalRunQueue(LocalRunQueue::kMaxCapacity));
}

TEST(LocalRunQueue, LifoPopsNewestFifoPopsOldest) {
  auto tasks = make_tasks(3);
  LocalRunQueue q(4);
  for (Task& t : tasks) ASSERT_TRUE(q.push(t));
  EXPECT_EQ(q.pop(LocalOrder::lifo), &tasks[2]);
  EXPECT_EQ(q.pop(LocalOrder::fifo), &tasks[0]);
  EXPECT_EQ(q.pop(LocalOrder::lifo), &tasks[1]);
  EXPECT_EQ(q.pop(LocalOrder::lifo), nullptr);
  EXPECT_TRUE(q.empty());
}

TEST(LocalRunQueue, PushFailsWhenFullAndWrapsAround) {
  auto tasks = make_tasks(4);
  LocalRunQueue q(4);
  // Go around the ring many times (the slot is the index modulo the capacity).
  for (int round = 0; round < 70000; ++round) {
    for (Task& t : tasks) ASSERT_TRUE(q.push(t));
    Task extra;
    ASSERT_FALSE(q.push(extra));
    for (int i = 3; i >= 0; --i) ASSERT_EQ(q.pop(LocalOrder::lifo), &tasks[static_cast<std::size_t>(i)]);
  }
}

TEST(LocalRunQueue, OverflowTakesTheOlderHalf) {
  auto tasks = make_tasks(8);
  LocalRunQueue q(8);
  for (Task& t : tasks) ASSERT_TRUE(q.push(t));
  Task* out[4];
  ASSERT_EQ(q.take_older_half(out), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(out[i], &tasks[i]);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.take_older_half(out), 0u) << "not full any more";
}

TEST(LocalRunQueue, StealTakesHalfRoundedUpFromTheHead) {
  auto tasks = make_tasks(5);
  LocalRunQueue victim(8), thief(8);
  for (Task& t : tasks) ASSERT_TRUE(victim.push(t));
  std::uint32_t moved = 0;
  Task* run_now = thief.steal_from(victim, StealAmount::half, LocalOrder::fifo, &moved);
  EXPECT_EQ(moved, 3u);
  EXPECT_EQ(run_now, &tasks[2]) << "a FIFO thief runs the newest of the batch first (Go)";
  EXPECT_EQ(thief.size(), 2u);
  EXPECT_EQ(thief.pop(LocalOrder::fifo), &tasks[0]) << "then the rest, oldest first";
  EXPECT_EQ(victim.size(), 2u);
  EXPECT_EQ(victim.pop(LocalOrder::fifo), &tasks[3]) << "the victim keeps its newest tasks";
}

// A LIFO thief must start the oldest stolen task at once: run newest-first, the batch would
// leave it, the task most worth moving, for last.
TEST(LocalRunQueue, LifoThiefRunsTheOldestStolenTaskFirst) {
  auto tasks = make_tasks(5);
  LocalRunQueue victim(8), thief(8);
  for (Task& t : tasks) ASSERT_TRUE(victim.push(t));
  std::uint32_t moved = 0;
  EXPECT_EQ(thief.steal_from(victim, StealAmount::half, LocalOrder::lifo, &moved), &tasks[0]);
  EXPECT_EQ(moved, 3u);
  EXPECT_EQ(thief.pop(LocalOrder::lifo), &tasks[2]) << "the rest keep the victim's order";
  EXPECT_EQ(thief.pop(LocalOrder::lifo), &tasks[1]);
  EXPECT_TRUE(thief.empty());
  EXPECT_EQ(victim.size(), 2u);
}

TEST(LocalRunQueue, StealAmountsOneAndAll) {
  for (const LocalOrder order : {LocalOrder::lifo, LocalOrder::fifo}) {
    auto tasks = make_tasks(6);
    LocalRunQueue victim(8), one(8), all(8);
    for (Task& t : tasks) ASSERT_TRUE(victim.push(t));
    std::uint32_t moved = 0;
    EXPECT_EQ(one.steal_from(victim, StealAmount::one, order, &moved), &tasks[0]);
    EXPECT_EQ(moved, 1u);
    EXPECT_EQ(all.steal_from(victim, StealAmount::all, order, &moved),
              order == LocalOrder::fifo ? &tasks[5] : &tasks[1]);
    EXPECT_EQ(moved, 5u);
    EXPECT_EQ(all.size(), 4u);
    EXPECT_TRUE(victim.empty());
    EXPECT_EQ(one.steal_from(victim, StealAmount::half, order, &moved), nullptr);
    EXPECT_EQ(moved, 0u);
  }
}

// One owner pushes every item once and pops some of them (LIFO or FIFO), overflowing into a
// private list when full; thieves steal from the owner and from each other and run what they
// get. Every item must be taken exactly once.
struct StressCase {
  std::uint32_t capacity;
  int thieves;
  LocalOrder order;
  std::size_t items;
};

class LocalRunQueueStress : public ::testing::TestWithParam<StressCase> {};

TEST_P(LocalRunQueueStress, EveryItemIsTakenExactlyOnce) {
  const StressCase c = GetParam();
  std::vector<Task> tasks(c.items);
  std::vector<std::atomic<int>> taken(c.items);
  auto take = [&](Task* t) { taken[static_cast<std::size_t>(t - tasks.data())].fetch_add(1); };

  LocalRunQueue owner(c.capacity);
  std::vector<std::unique_ptr<LocalRunQueue>> thief_queues;
  for (int i = 0; i < c.thieves; ++i) thief_queues.push_back(std::make_unique<LocalRunQueue>(c.capacity));
  std::atomic<bool> done{false};
  std::atomic<std::size_t> taken_total{0};

  std::vector<std::thread> thieves;
  for (int i = 0; i < c.thieves; ++i) {
    thieves.emplace_back([&, i] {
      std::minstd_rand rng(static_cast<unsigned>(i + 1));
      LocalRunQueue& mine = *thief_queues[static_cast<std::size_t>(i)];
      for (;;) {
        while (Task* t = mine.pop(LocalOrder::lifo)) {
          take(t);
          taken_total.fetch_add(1);
        }
        if (done.load() && owner.empty()) {
          bool all_empty = true;
          for (auto& q : thief_queues) all_empty = all_empty && q->empty();
          if (all_empty) return;
        }
        const int v = static_cast<int>(rng() % static_cast<unsigned>(c.thieves + 1));
        LocalRunQueue& victim = v == c.thieves ? owner : *thief_queues[static_cast<std::size_t>(v)];
        if (&victim == &mine) continue;
        std::uint32_t moved = 0;
        if (Task* t = mine.steal_from(victim, StealAmount::half, c.order, &moved)) {
          take(t);
          taken_total.fetch_add(1);
        }
      }
    });
  }

  std::minstd_rand rng(42);
  std::vector<Task*> overflow(c.capacity / 2);
  for (Task& t : tasks) {
    while (!owner.push(t)) {
      const std::uint32_t n = owner.take_older_half(overflow.data());
      for (std::uint32_t i = 0; i < n; ++i) {
        take(overflow[i]);
        taken_total.fetch_add(1);
      }
    }
    if (rng() % 3 == 0) {
      if (Task* p = owner.pop(c.order)) {
        take(p);
        taken_total.fetch_add(1);
      }
    }
  }
  while (Task* p = owner.pop(c.order)) {
    take(p);
    taken_total.fetch_add(1);
  }
  done.store(true);
  for (auto& th : thieves) th.join();

  EXPECT_EQ(taken_total.load(), c.items);
  std::size_t wrong = 0;
  for (auto& n : taken) wrong += n.load() != 1;
  EXPECT_EQ(wrong, 0u) << "items taken zero or several times";
}

INSTANTIATE_TEST_SUITE_P(
    Capacities, LocalRunQueueStress,
    ::testing::Values(StressCase{2, 3, LocalOrder::lifo, 300000},
                      StressCase{4, 3, LocalOrder::fifo, 300000},
                      StressCase{4, 1, LocalOrder::lifo, 300000},
                      StressCase{256, 3, LocalOrder::lifo, 1000000},
                      StressCase{256, 2, LocalOrder::fifo, 1000000}),
    [](const auto& info) {
      const StressCase& c = info.param;
      return "cap" + std::to_string(c.capacity) + "_thieves" + std::to_string(c.thieves) +
             (c.order == LocalOrder::lifo ? "_lifo" : "_fifo");
    });

}  // namespace
}  // namespace schedlab
