// The speed probe (harness/speed_probe.hpp): a block repetition around which a CPU ran slow, or
// the CPUs ran apart, is flagged; the figures say by how much; the sidecar's summary says what
// the probe cost.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "speed_probe.hpp"

namespace schedlab {
namespace {

TEST(SpeedProbe, ProbesEveryCpuItMayUseAloneAndAllAtOnce) {
  SpeedProbe probe;
  const SpeedProbe::Point p = probe.end();
  ASSERT_EQ(p.per_cpu.size(), probe.cpus().size());
  for (double ns : p.per_cpu) EXPECT_GT(ns, 0.0);
  if (probe.cpus().size() > 1) {
    // A round lasts at least one spin, which the same work alone on the slowest CPU measures.
    EXPECT_GT(p.together, 0.5 * *std::min_element(p.per_cpu.begin(), p.per_cpu.end()));
  } else {
    EXPECT_TRUE(std::isnan(p.together)) << "one CPU: nothing to run at once";
  }
  const SpeedProbe::Point again = probe.start();
  EXPECT_EQ(again.per_cpu, p.per_cpu) << "nothing ran since: the next block repetition starts from this probe";
  EXPECT_TRUE(again.together == p.together || (std::isnan(again.together) && std::isnan(p.together)));
  probe.invalidate();
  EXPECT_EQ(probe.start().per_cpu.size(), p.per_cpu.size());
}

// Whatever the machine's own noise, a probe four times as long as a real one is more than 25% slower
// than the CPU's median of real ones.
TEST(SpeedProbe, AProbeAtHalfSpeedIsFlaggedWithItsFigures) {
  SpeedProbe probe;
  const SpeedProbe::Point real = probe.end();
  SpeedProbe::Point half_speed = real;
  for (double& ns : half_speed.per_cpu) ns *= 4;
  const SpeedVerdict slow = probe.judge(half_speed, real);
  EXPECT_TRUE(slow.slow);
  EXPECT_GT(slow.slowest, 1 + kSlowCpuShare);
  const bool several = real.per_cpu.size() > 1;
  if (several) {
    // one CPU slow while the others are not: the CPUs ran apart too
    SpeedProbe::Point one_slow = real;
    one_slow.per_cpu[0] *= 4;
    const SpeedVerdict apart = probe.judge(one_slow, one_slow);
    EXPECT_TRUE(apart.slow);
    EXPECT_GT(apart.spread, 1 + kSlowCpuShare);
    // Every CPU as fast as usual alone, but not at once: flagged on `together` alone.
    SpeedProbe::Point in_turns = real;
    in_turns.together *= 4;
    const SpeedVerdict turns = probe.judge(in_turns, real);
    EXPECT_TRUE(turns.slow);
    EXPECT_GT(turns.together, 1 + kSlowCpuShare);
    EXPECT_LT(turns.slowest, 1 + kSlowCpuShare) << "the CPUs alone were measured at their usual speed";
  }
  const nlohmann::json summary = probe.summary();
  EXPECT_EQ(summary["block_repetitions"], 1 + (several ? 2 : 0));
  EXPECT_EQ(summary["flagged"], summary["block_repetitions"]);
  EXPECT_GT(summary["cost_ns_per_block_repetition"].get<double>(), 0.0);
  EXPECT_EQ(summary["median_ns"].size(), real.per_cpu.size());
  EXPECT_EQ(summary["together_median_ns"].is_number(), several);
}

}  // namespace
}  // namespace schedlab
