// The speed probe (harness/speed_probe.hpp): a block repetition around which a CPU ran slow, or
// the CPUs ran apart, is flagged; the figures say by how much; the sidecar's summary says what
// the probe cost.
#include <gtest/gtest.h>

#include "speed_probe.hpp"

namespace schedlab {
namespace {

TEST(SpeedProbe, ProbesEveryCpuItMayUse) {
  SpeedProbe probe;
  const SpeedProbe::Point p = probe.end();
  ASSERT_EQ(p.size(), probe.cpus().size());
  for (double ns : p) EXPECT_GT(ns, 0.0);
  EXPECT_EQ(probe.start(), p) << "nothing ran since: the next block repetition starts from this probe";
  probe.invalidate();
  EXPECT_EQ(probe.start().size(), p.size());
}

// Whatever the machine's own noise, a probe four times as long as a real one is more than 25% slower
// than the CPU's median of real ones.
TEST(SpeedProbe, AProbeAtHalfSpeedIsFlaggedWithItsFigures) {
  SpeedProbe probe;
  const SpeedProbe::Point real = probe.end();
  SpeedProbe::Point half_speed = real;
  for (double& ns : half_speed) ns *= 4;
  const SpeedVerdict slow = probe.judge(half_speed, real);
  EXPECT_TRUE(slow.slow);
  EXPECT_GT(slow.slowest, 1 + kSlowCpuShare);
  if (real.size() > 1) {  // one CPU slow while the others are not: the CPUs ran apart too
    SpeedProbe::Point one_slow = real;
    one_slow[0] *= 4;
    const SpeedVerdict apart = probe.judge(one_slow, one_slow);
    EXPECT_TRUE(apart.slow);
    EXPECT_GT(apart.spread, 1 + kSlowCpuShare);
  }
  const nlohmann::json summary = probe.summary();
  EXPECT_EQ(summary["block_repetitions"], 1 + (real.size() > 1 ? 1 : 0));
  EXPECT_EQ(summary["flagged"], summary["block_repetitions"]);
  EXPECT_GT(summary["cost_ns_per_block_repetition"].get<double>(), 0.0);
  EXPECT_EQ(summary["median_ns"].size(), real.size());
}

}  // namespace
}  // namespace schedlab
