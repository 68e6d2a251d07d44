// speed_probe.hpp: how fast each CPU ran around a block repetition, from a known piece of work.
//
// A shared VM has slow phases that nothing inside the guest reports: measured on this project's
// machines, five consecutive blocks of one configuration ran their work at half speed (the CPU
// time of the same loops doubled) while /proc/stat's steal and every other process's CPU time
// stayed at 0, so the `noisy` flag (other processes' CPU time) saw nothing. Only the speed of a
// known piece of work shows such a phase. So before and after every block repetition the runner
// times a short fixed spin on each CPU the run may use, pinned there, and then on every CPU at
// once (the gang, below). A point is one such probe: a time per CPU, and the gang's.
//
// What a probe can tell, and what each row carries (for the CPUs its case ran on, case_cpus):
//
//   change   = the largest ratio, either way, between a CPU's time after the block repetition
//              and before it (and the gang's, for a case on several CPUs): the machine changed
//              speed DURING the block. That is what breaks a paired comparison, whose variants
//              ran back to back between the two probes: a state that lasts through the block
//              slows every variant alike and cancels in their ratio. Flagged `slow_cpu` above
//              1 + kSlowCpuShare, and above the usual change (below).
//   usual    = how much this machine's speed moves between any two consecutive probes now: the
//              kUsualQuantile of the changes over the last kUsualWindow pairs of probes before
//              the block. A change no larger than what every block sees is not a disturbance of
//              this block.
//   spread   = the slowest over the fastest of the case's CPUs, in absolute time (the same spin
//              on each): CPUs of unequal speed. Not a flag: the paired comparisons of variants at
//              the same thread count are judged on the machine as it was; a comparison of a run
//              at P threads with one at 1 thread (efficiency, growth) is not (claims.py).
//   together = the gang's round over the slowest CPU's spin alone, in absolute time: about 1 when
//              the CPUs run at once, about 2 when the host runs the guest's CPUs only in turns.
//              Read like spread.
//
// Why "during the block", not "slower than the run's median so far" (this probe's rule before):
// on a fresh cloud VM one vCPU ran 1.5x slower than the other for ten minutes (a host-level
// state: a busy sibling hyperthread). Against the median of the whole run, every block after
// the change was flagged until the new state was half the history; 62% of the repetitions were
// flagged and replaced, and replaced again, and the quick preset took 25 minutes instead of 6.
// A state that lasts is the machine as it is; only a change inside a block is a disturbance.
// Why "beyond the usual change", not a fixed quarter alone (the rule before, for a day): on this
// project's VM with nothing else running (load 0.3), the host made each vCPU's speed flicker on a
// sub-second scale: probes 100 ms apart changed by a median of 1.34x and a 90th percentile of
// 1.84x, 56% of them beyond a quarter. Every block then "changed during the block" by about as
// much as every other; flagging that left 1 of 9 blocks of an A/B run and judged nothing, though
// the blocks were no different from each other: in random order within each block, the variants
// meet the flicker alike, and the paired intervals widen to show it. Only a change that stands out
// from the machine's recent behaviour breaks a pair more than its neighbours; on a quiet host the
// usual change is about 1.01 and the quarter rules.
// The absolute comparison catches what the old relative one missed: a CPU that was slow since
// before the run began (each CPU compared only with itself saw nothing, while a busy loop took
// 1.57x as long on one as on the other).
//
// The gang is there because one CPU at a time is not how a parallel block runs: in a run of the
// quick preset on this project's VM, for about two seconds every 2-thread variant of a
// configuration took 2.3-2.4x its usual time while each CPU's probe alone ran at its usual speed:
// the hypervisor ran the guest's two vCPUs one at a time. Spins on every CPU at once, started
// together, take twice as long when the CPUs take turns.
//
// What a probe cannot see: a phase shorter than a block repetition that falls between its two
// probes, or another guest process sharing a CPU (the kernel lets a freshly pinned probe run
// ahead of it; machine_load.hpp's `noisy` catches those). Consecutive block repetitions share
// the probe between them, so a run pays about one probe per block repetition (the sidecar's
// `speed_probe` gives its cost).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace schedlab {

// A row is flagged `slow_cpu` when one of its CPUs (or, for a case on several, the gang) ran more
// than this share faster or slower after its block repetition than before it. A quarter: on an
// idle guest two consecutive probes of a CPU stay within 1.5% of each other in 9 of 10
// (docs/platform.md), while a change of a quarter during a block shifts a comparison by more than
// the 5-10% that most claims count, and the phases seen run at half speed.
inline constexpr double kSlowCpuShare = 0.25;
// The usual change: the 90th percentile of the changes between consecutive recorded probes (each
// CPU of the row's, and the gang's), over the last 20 pairs before the block. 20 pairs are a few
// seconds to a minute of blocks: a new lasting state (one jump) raises it not at all, since the
// 90th percentile of 20 is their third largest; a machine whose speed moves at every probe raises
// it within a few blocks, so that about one block in ten is still flagged there, its most
// disturbed.
inline constexpr std::size_t kUsualWindow = 20;
inline constexpr double kUsualQuantile = 0.9;
// CPUs of unequal speed: the slowest of a case's CPUs took more than this ratio of the fastest's
// time for the same spin. A tenth: T_S measured on the slower of two CPUs whose speeds differ by
// r inflates a 2-thread efficiency by up to 2r / (1 + r), about 5% at r = 1.1, the smallest
// effect the claims count (criteria.toml); the idle guest's CPUs sit within 0.4% of each other.
// The claims do not judge a comparison of P threads with 1 thread on blocks above it.
inline constexpr double kUnequalCpuRatio = 1.10;
// CPUs that ran in turns: the gang's round took more than this ratio of the slowest CPU's spin
// alone. Half-way between 1 (at once) and 2 (in turns): an idle guest's rounds stay within 1% of
// their usual time, the phase seen took 2.3x.
inline constexpr double kInTurnsRatio = 1.5;

// The probe's figures for one row (its CPUs) around one block repetition.
struct SpeedVerdict {
  double change = 1.0;    // >= 1
  double spread = 1.0;    // >= 1; 1 for a case on one CPU
  double together = NAN;  // NaN for a case on one CPU, or a process that may use one CPU
  double usual = 1.0;     // >= 1; the usual change the verdict was given
  bool slow = false;      // change > max(1 + kSlowCpuShare, usual)
};

// A test hook, never set by `schedlab run` itself: SCHEDLAB_TEST_PROBE_SCALE=CPU:FACTOR[@SECONDS]
// multiplies every probe reading of CPU number CPU (and the gang's round) by FACTOR, from SECONDS
// after the probe starts (0 when omitted): a CPU that runs slower than the others, which the
// guest cannot see otherwise, for tests and scripts/cotenant's `--mode slow-cpu`. A run made with
// it says so on stderr and in its sidecar (`speed_probe.test_scale`).
inline constexpr char kProbeScaleEnv[] = "SCHEDLAB_TEST_PROBE_SCALE";
struct ProbeScale {
  int cpu = -1;
  double factor = 1;
  double after_s = 0;
};
// Parses the hook's value; nullopt when unset; throws std::invalid_argument naming the fix when
// malformed.
std::optional<ProbeScale> probe_scale_from_env();

class SpinGang;

class SpeedProbe {
 public:
  // One probe: a time per CPU, in the order of cpus(), and the time of the spins on every CPU at
  // once (NaN with one CPU). Nanoseconds; `unix_s` when it was taken (CLOCK_REALTIME).
  struct Point {
    std::vector<double> per_cpu;
    double together = NAN;
    double unix_s = 0;
  };

  // Probes every CPU this process may use (cpu_pin.hpp's allowed_cpus), kCalibration times: the
  // CPUs' speeds against each other when the run starts (calibration()). Starts one thread per
  // CPU for the spins at once, pinned there and asleep between probes.
  SpeedProbe();
  ~SpeedProbe();
  SpeedProbe(const SpeedProbe&) = delete;
  SpeedProbe& operator=(const SpeedProbe&) = delete;

  // The probe before a block repetition: the one after the previous repetition when nothing ran
  // since (two back-to-back probes would measure the same moment twice), else a new one.
  Point start() { return fresh_ ? last_ : probe(); }
  // The probe after a block repetition.
  Point end() {
    last_ = probe();
    fresh_ = true;
    return last_;
  }
  // Something ran since the last probe (a scheduler built and warmed up, a workload prepared):
  // the next start() probes anew.
  void invalidate() { fresh_ = false; }
  // The verdict for a row whose case ran on `cpus` (indices into cpus(), case_cpus), from the
  // probes before and after its block repetition and the usual change on those CPUs before it.
  // Pure: the same points give the same verdict.
  static SpeedVerdict verdict(const Point& before, const Point& after, const std::vector<unsigned>& cpus,
                              double usual = 1.0);
  // The usual change on `cpus` (kUsualQuantile of the changes between consecutive probes of
  // points[0, end), the last kUsualWindow pairs); 1 with fewer than two points. Pure.
  static double usual_change(const std::vector<Point>& points, std::size_t end, const std::vector<unsigned>& cpus);
  // Whether the machine's speed holds still now: two probes `window` apart, recorded nowhere,
  // give no change beyond kSlowCpuShare and the usual change on any CPU. The runner waits for
  // this before replacements.
  template <class Wait>
  bool steady_over(Wait&& window) {
    const Point before = probe(/*record=*/false);
    window();
    const Point after = probe(/*record=*/false);
    invalidate();  // the next block repetition's start is probed anew, and recorded
    std::vector<unsigned> all(cpus_.size());
    for (unsigned i = 0; i < all.size(); ++i) all[i] = i;
    return !verdict(before, after, all, usual_change(points_, points_.size(), all)).slow;
  }
  // One block repetition judged: `flagged` when a row of it was (any flag). For the summary.
  void count_block(bool flagged) {
    ++judged_;
    if (flagged) ++flagged_;
  }

  const std::vector<int>& cpus() const { return cpus_; }
  // Every probe recorded in the run, in order (the calibration first): the sidecar's timeline.
  const std::vector<Point>& points() const { return points_; }
  // The CPUs' absolute speeds when the run started: each CPU's median over the calibration
  // probes, in the order of cpus().
  const std::vector<double>& calibration() const { return calibration_; }
  // For the sidecar: the spin, the CPUs, their speeds at the start and over the run, the
  // thresholds, the test hook if set, and what the probe cost (wall time per block repetition).
  nlohmann::json summary() const;

 private:
  // Times the spin on each CPU, the calling thread pinned there for the spin and given its own
  // CPU mask back after, then on every CPU at once (the gang). Executed only by the runner's
  // thread, between measurements.
  Point probe(bool record = true);
  void apply_test_scale(Point& p) const;

  std::vector<int> cpus_;
  std::unique_ptr<SpinGang> gang_;  // null with one CPU
  std::optional<ProbeScale> scale_;
  double started_unix_s_ = 0;
  std::vector<Point> points_;        // every recorded probe of the run
  std::vector<double> calibration_;  // per CPU, ns
  double spent_ns_ = 0;              // wall time of every probe() so far, calibration excluded
  std::uint64_t judged_ = 0, flagged_ = 0;  // block repetitions judged, and flagged
  Point last_;                       // the last end()
  bool fresh_ = false;               // nothing ran since last_
};

}  // namespace schedlab
