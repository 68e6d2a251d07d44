// The machine as a run sees it (harness/speed_probe.hpp, machine_load.hpp, machine_timeline.hpp):
// a row is flagged only for what happened on its own CPUs, and only for a change during its block
// (a lasting state is the machine as it is: the paired comparisons cancel it); CPUs of unequal
// speed are measured in absolute terms and named; other processes' time is bounded per CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "machine_load.hpp"
#include "machine_timeline.hpp"
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
  EXPECT_GT(p.unix_s, 1.6e9);
  const SpeedProbe::Point again = probe.start();
  EXPECT_EQ(again.per_cpu, p.per_cpu) << "nothing ran since: the next block repetition starts from this probe";
  probe.invalidate();
  EXPECT_EQ(probe.start().per_cpu.size(), p.per_cpu.size());
  ASSERT_EQ(probe.calibration().size(), probe.cpus().size());
  for (double ns : probe.calibration()) EXPECT_GT(ns, 0.0);
  const nlohmann::json summary = probe.summary();
  EXPECT_EQ(summary["calibration_ns"].size(), probe.cpus().size());
  EXPECT_EQ(summary["unequal_ratio"], kUnequalCpuRatio);
  EXPECT_FALSE(summary.contains("test_scale"));
  EXPECT_GE(probe.points().size(), 5u) << "the calibration probes are the timeline's first";
}

SpeedProbe::Point point(std::vector<double> per_cpu, double together = NAN) { return {std::move(per_cpu), together, 0}; }

// The rule on fixed probe points: a CPU that changes speed during a block flags the rows that ran
// on it, and only those; a CPU that stays slow through the block flags nothing, and shows as the
// spread of the rows on both CPUs.
TEST(SpeedVerdict, FlagsOnlyAChangeDuringTheBlockOnTheRowsOwnCpus) {
  const std::vector<unsigned> cpu0{0}, both{0, 1};
  // CPU 1 halves its speed during the block.
  const auto before = point({20e3, 20e3}, 21e3), after = point({20e3, 40e3}, 41e3);
  const SpeedVerdict one = SpeedProbe::verdict(before, after, cpu0);
  EXPECT_FALSE(one.slow) << "a 1-thread case on CPU 0 is not flagged for CPU 1";
  EXPECT_DOUBLE_EQ(one.change, 1.0);
  EXPECT_DOUBLE_EQ(one.spread, 1.0);
  EXPECT_TRUE(std::isnan(one.together)) << "one CPU: nothing ran at once";
  const SpeedVerdict two = SpeedProbe::verdict(before, after, both);
  EXPECT_TRUE(two.slow);
  EXPECT_DOUBLE_EQ(two.change, 2.0);
  EXPECT_DOUBLE_EQ(two.spread, 2.0);
  // CPU 0 changes, either way: the 1-thread row is flagged.
  EXPECT_TRUE(SpeedProbe::verdict(point({40e3, 20e3}), point({20e3, 20e3}), cpu0).slow);
  EXPECT_TRUE(SpeedProbe::verdict(point({20e3, 20e3}), point({30e3, 20e3}), cpu0).slow);
  EXPECT_FALSE(SpeedProbe::verdict(point({20e3, 20e3}), point({24e3, 20e3}), cpu0).slow) << "20% is under the share";
  // CPU 1 1.5x slower before and after: a lasting state, not flagged, measured as the spread.
  const SpeedVerdict state = SpeedProbe::verdict(point({20e3, 30e3}, 31e3), point({20e3, 30e3}, 31e3), both);
  EXPECT_FALSE(state.slow);
  EXPECT_DOUBLE_EQ(state.spread, 1.5);
  EXPECT_NEAR(state.together, 31.0 / 30.0, 1e-12) << "at once: the round as long as the slowest CPU's spin";
  // Both CPUs at their speed alone, but in turns together: absolute together, no flag...
  const SpeedVerdict turns = SpeedProbe::verdict(point({20e3, 20e3}, 40e3), point({20e3, 20e3}, 40e3), both);
  EXPECT_FALSE(turns.slow);
  EXPECT_DOUBLE_EQ(turns.together, 2.0);
  // ... unless it changed during the block, which flags the rows on both CPUs only.
  const auto apart = point({20e3, 20e3}, 21e3), in_turns = point({20e3, 20e3}, 42e3);
  EXPECT_TRUE(SpeedProbe::verdict(apart, in_turns, both).slow);
  EXPECT_FALSE(SpeedProbe::verdict(apart, in_turns, cpu0).slow);
}

// Over a sequence of blocks (probe i before block i, probe i + 1 after it): a lasting change of
// state is flagged in the one block it began in, then becomes the norm; a short phase of two
// probes is flagged at its two edges, each time.
TEST(SpeedVerdict, ALastingStateIsTheNormAfterOneBlockAndAShortPhaseIsFlaggedAtItsEdges) {
  const auto flagged_blocks = [](const std::vector<double>& cpu1) {
    std::vector<int> out;
    for (std::size_t i = 0; i + 1 < cpu1.size(); ++i) {
      if (SpeedProbe::verdict(point({20e3, cpu1[i]}), point({20e3, cpu1[i + 1]}), {0, 1}).slow) {
        out.push_back(static_cast<int>(i));
      }
    }
    return out;
  };
  std::vector<double> lasting(20, 20e3);
  for (std::size_t i = 5; i < lasting.size(); ++i) lasting[i] = 30e3;
  EXPECT_EQ(flagged_blocks(lasting), std::vector<int>{4});
  std::vector<double> phase(20, 20e3);
  phase[8] = phase[9] = 40e3;
  EXPECT_EQ(flagged_blocks(phase), (std::vector<int>{7, 9}));
  // The same probes never flag a row on CPU 0 alone.
  for (std::size_t i = 0; i + 1 < phase.size(); ++i) {
    EXPECT_FALSE(SpeedProbe::verdict(point({20e3, phase[i]}), point({20e3, phase[i + 1]}), {0}).slow);
  }
}

// The usual change (the machine's own flicker between probes) raises the bar only when most
// probes move: a quiet machine's one change is flagged at a quarter; on a machine whose speed
// flickers 1.6x between any two probes (measured here: 1.34x median, 1.84x 90th percentile)
// most blocks are not flagged, while a jump beyond the flicker still is.
TEST(SpeedVerdict, ABlockIsFlaggedForAChangeBeyondTheMachinesUsualFlicker) {
  const std::vector<unsigned> cpu1{1};
  const auto flagged_blocks = [&](const std::vector<double>& cpu1_ns) {
    std::vector<SpeedProbe::Point> points;
    for (double ns : cpu1_ns) points.push_back(point({20e3, ns}));
    std::vector<int> out;
    for (std::size_t i = 0; i + 1 < points.size(); ++i) {
      const double usual = SpeedProbe::usual_change(points, i + 1, cpu1);
      if (SpeedProbe::verdict(points[i], points[i + 1], cpu1, usual).slow) out.push_back(static_cast<int>(i));
    }
    return out;
  };
  // Quiet, then one lasting change: the usual change is ~1 and the quarter flags it.
  std::vector<double> quiet(30, 20e3);
  for (std::size_t i = 10; i < quiet.size(); ++i) quiet[i] = 26e3;
  EXPECT_EQ(flagged_blocks(quiet), std::vector<int>{9}) << "1.3x on a quiet machine is a disturbance";
  EXPECT_DOUBLE_EQ(SpeedProbe::usual_change({point({1, 20e3}), point({1, 26e3})}, 2, cpu1), 1.3);
  EXPECT_DOUBLE_EQ(SpeedProbe::usual_change({point({1, 20e3})}, 1, cpu1), 1.0) << "one probe: nothing usual yet";
  // Flicker: 20 and 32 µs alternating (1.6x at every probe), then a 3x jump inside it.
  std::vector<double> flicker;
  for (int i = 0; i < 40; ++i) flicker.push_back(i % 2 ? 32e3 : 20e3);
  flicker[30] = 96e3;
  const std::vector<int> flagged = flagged_blocks(flicker);
  EXPECT_EQ(flagged.front(), 0) << "the first change has no history: the quarter rules";
  EXPECT_LE(flagged.size(), 4u) << "the flicker itself is the norm after the first blocks";
  EXPECT_TRUE(std::count(flagged.begin(), flagged.end(), 29) && std::count(flagged.begin(), flagged.end(), 30))
      << "a 3x jump beyond the 1.6x flicker is flagged at both its edges";
  // The usual change on CPU 1 does not raise the bar on CPU 0.
  std::vector<SpeedProbe::Point> points;
  for (double ns : flicker) points.push_back(point({20e3, ns}));
  EXPECT_DOUBLE_EQ(SpeedProbe::usual_change(points, 20, {0}), 1.0);
  EXPECT_TRUE(SpeedProbe::verdict(point({20e3, 20e3}), point({26e3, 20e3}), {0},
                                  SpeedProbe::usual_change(points, 20, {0})).slow);
}

TEST(SpeedProbe, TheTestHookScalesOneCpusReadingsAndSaysSo) {
  ::setenv(kProbeScaleEnv, "1:1.5", 1);
  const auto parsed = probe_scale_from_env();
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->cpu, 1);
  EXPECT_DOUBLE_EQ(parsed->factor, 1.5);
  EXPECT_DOUBLE_EQ(parsed->after_s, 0);
  ::setenv(kProbeScaleEnv, "0:2@30", 1);
  EXPECT_DOUBLE_EQ(probe_scale_from_env()->after_s, 30);
  for (const char* bad : {"1", "x:1.5", "1:1.5@", "1:-1", "1:1.5junk", "-1:2"}) {
    ::setenv(kProbeScaleEnv, bad, 1);
    EXPECT_THROW(probe_scale_from_env(), std::invalid_argument) << bad;
  }
  ::setenv(kProbeScaleEnv, "0:3", 1);
  {
    SpeedProbe probe;
    const nlohmann::json summary = probe.summary();
    ASSERT_TRUE(summary.contains("test_scale"));
    EXPECT_EQ(summary["test_scale"]["factor"], 3.0);
    if (probe.cpus().size() > 1 && probe.cpus()[0] == 0) {
      // CPU 0's calibration reads 3x its real time: the run starts with CPUs of unequal speed.
      EXPECT_GT(summary["calibration_spread"].get<double>(), kUnequalCpuRatio);
    }
  }
  ::unsetenv(kProbeScaleEnv);
  EXPECT_FALSE(probe_scale_from_env());
}

// Other processes' time on a set of CPUs: busy time minus the most this process can have used of
// them. A co-tenant on CPU 1 does not count against a 1-thread case on CPU 0; on CPU 0 it does.
TEST(BlockLoad, BoundsOtherProcessesTimePerCpu) {
  using Segment = BlockLoad::Segment;
  const double ms = 1e6;
  // A block of a 1-thread case on CPU 0 (10 ms, own 10 ms) and a 2-thread case (10 ms, own 16 ms:
  // worker 1 lost 4 ms of CPU 1), and 1 ms between them (own 0.5 ms, anywhere).
  const std::vector<Segment> segments{{{0}, 10 * ms, 10 * ms}, {{0, 1}, 16 * ms, 10 * ms}, {{0, 1}, 0.5 * ms, 1 * ms}};
  // A co-tenant on CPU 1 took 4 ms of the 2-thread case and 10 ms of the 1-thread one (CPU 1
  // busy 6 + 4 + 10 = 20 ms; CPU 0 busy 10 + 10 + 0.5).
  EXPECT_DOUBLE_EQ(BlockLoad::others_on(20.5 * ms, segments, {0}), 0.0) << "its own work on CPU 0 only";
  EXPECT_NEAR(BlockLoad::others_on(40.5 * ms, segments, {0, 1}), 14 * ms, 1e-6) << "the co-tenant's 14 ms";
  // Busy time below the bound (tick rounding) is never negative.
  EXPECT_DOUBLE_EQ(BlockLoad::others_on(5 * ms, segments, {0}), 0.0);
  // A co-tenant on CPU 0 while the 1-thread case ran there shows in full.
  EXPECT_NEAR(BlockLoad::others_on(27.5 * ms, {{{0}, 6 * ms, 10 * ms}, {{0, 1}, 20 * ms, 10 * ms}}, {0}), 11.5 * ms, 1e-6);
  // A real block: some load on every CPU it measured, a start and a duration.
  BlockLoad load;
  load.case_begin();
  load.case_end(all_cpus(1));
  load.finish();
  const MachineLoad m = load.on({0});
  ASSERT_TRUE(m.other_cpu_ns && m.noisy);
  EXPECT_GE(*m.other_cpu_ns, 0.0);
  EXPECT_GT(load.started_unix_s(), 1.6e9);
  EXPECT_GE(load.duration_s(), 0.0);
}

// The timeline's episodes name what the machine did in words: a CPU that stayed slower, other
// processes on one CPU, blocks during which a speed changed.
TEST(MachineTimeline, NamesEachEpisodeAsWhatItWas) {
  MachineTimeline t({0, 1});
  const auto even = point({20e3, 20e3}, 21e3), slow1 = point({20e3, 30e3}, 31e3);
  double clock = 1.8e9;
  for (int i = 0; i < 4; ++i, clock += 0.5) t.add_block(clock, 0.4, {0.0, 0.0}, even, even, 6, 0, 0);
  t.add_block(clock, 0.4, {0.0, 0.0}, even, slow1, 6, 0, 3);  // CPU 1 slows during this block
  clock += 0.5;
  for (int i = 0; i < 10; ++i, clock += 0.5) t.add_block(clock, 0.4, {0.0, 0.4}, slow1, slow1, 6, 3, 0);
  const std::vector<MachineTimeline::Episode> episodes = t.episodes();
  const auto find = [&](const std::string& kind) {
    return std::find_if(episodes.begin(), episodes.end(), [&](const auto& e) { return e.kind == kind; });
  };
  ASSERT_NE(find("unequal"), episodes.end());
  EXPECT_EQ(find("unequal")->cpu, 1);
  EXPECT_EQ(find("unequal")->blocks, 11u);
  EXPECT_NE(find("unequal")->text.find("CPU 1 ran 1.50x slower than CPU 0"), std::string::npos) << find("unequal")->text;
  ASSERT_NE(find("others"), episodes.end());
  EXPECT_NE(find("others")->text.find("other processes took 40% of CPU 1"), std::string::npos) << find("others")->text;
  ASSERT_NE(find("changes"), episodes.end());
  EXPECT_EQ(find("changes")->blocks, 1u);
  EXPECT_EQ(find("in_turns"), episodes.end());
  const std::string said = describe_machine(episodes);
  EXPECT_NE(said.find("CPU 1 ran 1.50x slower"), std::string::npos) << said;
  EXPECT_NE(said.find("1 shorter episode"), std::string::npos) << said;
  const nlohmann::json j = t.json({even, slow1});
  EXPECT_EQ(j["blocks"]["unix_s"].size(), 15u);
  EXPECT_EQ(j["probes"]["ns"].size(), 2u);
  EXPECT_EQ(j["episodes"].size(), episodes.size());
  EXPECT_NE(describe_machine({}).find("ran at the same speed"), std::string::npos);
}

}  // namespace
}  // namespace schedlab
