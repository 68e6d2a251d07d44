// LiveTaskGauge: per-worker batches folded into one shared count, an exact peak with one
// worker, a bounded one with several, and a peak that each run starts afresh.
#include "live_tasks.hpp"

#include <gtest/gtest.h>

#include "../assert.hpp"

namespace schedlab {
namespace {

constexpr std::int64_t kBatch = LiveTaskGauge::kLiveBatch;

class LiveTaskGaugeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!SCHEDLAB_STATS) GTEST_SKIP() << "built with SCHEDLAB_STATS=0: the gauge counts nothing";
  }
  // n spawns (n > 0) or finishes (n < 0) on the worker owning `batch`.
  void change(std::int64_t& batch, std::int64_t n) {
    for (; n > 0; --n) gauge.adjust(batch, +1);
    for (; n < 0; ++n) gauge.adjust(batch, -1);
  }
  LiveTaskGauge gauge;
};

TEST_F(LiveTaskGaugeTest, ABatchReachesTheSharedCountOnlyWhenFull) {
  std::int64_t batch = 0;
  change(batch, kBatch - 1);
  EXPECT_EQ(gauge.current(), 0);
  EXPECT_EQ(batch, kBatch - 1);
  change(batch, 1);
  EXPECT_EQ(gauge.current(), kBatch);
  EXPECT_EQ(batch, 0);
  change(batch, -kBatch);  // finishes are batched the same way
  EXPECT_EQ(gauge.current(), 0);
  EXPECT_EQ(batch, 0);
}

TEST_F(LiveTaskGaugeTest, FlushOnIdleMakesTheCountExact) {
  std::int64_t a = 0, b = 0;  // two workers: a spawned 7, b finished 3 of them
  change(a, 7);
  change(b, -3);
  EXPECT_EQ(gauge.current(), 0) << "nothing flushed yet";
  gauge.flush(b);  // b goes idle first: the shared count dips below zero
  EXPECT_EQ(gauge.current(), -3);
  gauge.flush(a);
  EXPECT_EQ(gauge.current(), 4);
  EXPECT_EQ(gauge.settled(), 4);
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 0);
}

TEST_F(LiveTaskGaugeTest, PeakIsExactWithOneWorker) {
  std::int64_t batch = 0;
  // A LIFO worker's count oscillates inside one batch and is never flushed: the peak still sees
  // every top.
  for (int i = 0; i < 100; ++i) {
    change(batch, 5);
    change(batch, -5);
  }
  EXPECT_EQ(gauge.current(), 0);
  EXPECT_EQ(gauge.peak(), 5u);
  // Across several flushes: up to 100, down to 10, up to 40.
  change(batch, 100);
  change(batch, -90);
  change(batch, 30);
  EXPECT_EQ(gauge.peak(), 100u);
  gauge.flush(batch);
  EXPECT_EQ(gauge.settled(), 40);
}

TEST_F(LiveTaskGaugeTest, PeakMissesAtMostOtherWorkersUnflushedBatches) {
  std::int64_t a = 0, b = 0;
  change(a, kBatch - 1);  // alive, but only in a's batch
  change(b, kBatch - 1);
  // The true peak is 2 x 31; each worker sees the flushed count plus its own batch.
  EXPECT_EQ(gauge.peak(), static_cast<std::uint64_t>(kBatch - 1));
  gauge.flush(a);
  gauge.flush(b);
  EXPECT_EQ(gauge.peak(), static_cast<std::uint64_t>(2 * (kBatch - 1))) << "exact once flushed";
}

TEST_F(LiveTaskGaugeTest, ResetPeakStartsFromTheTasksStillAlive) {
  std::int64_t batch = 0;
  change(batch, 50);
  change(batch, -40);
  gauge.flush(batch);
  ASSERT_EQ(gauge.peak(), 50u);
  gauge.reset_peak();  // a new run: its peak starts at what is alive now
  EXPECT_EQ(gauge.peak(), 10u);
  change(batch, 3);
  EXPECT_EQ(gauge.peak(), 13u);
}

TEST_F(LiveTaskGaugeTest, NegativeSettledCountIsAnInvariantViolation) {
  if (!kAssertionsOn) GTEST_SKIP() << "SCHEDLAB_ASSERT is compiled out in this build";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::int64_t batch = 0;
  change(batch, -1);  // a task finished that was never counted in
  gauge.flush(batch);
  EXPECT_DEATH((void)gauge.settled(), "invariant violated: .*live tasks never negative");
}

}  // namespace
}  // namespace schedlab
