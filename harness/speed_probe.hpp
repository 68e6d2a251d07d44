// speed_probe.hpp: how fast each CPU ran around a block repetition, from a known piece of work.
//
// A shared VM has slow phases that nothing inside the guest reports: measured on this project's
// machines, five consecutive blocks of one configuration ran their work at half speed (the CPU
// time of the same loops doubled) while /proc/stat's steal and every other process's CPU time
// stayed at 0, so the `noisy` flag (other processes' CPU time) saw nothing. Only the speed of a
// known piece of work shows such a phase. So before and after every block repetition the runner
// times a short fixed spin on each CPU the run may use, pinned there, and compares it with the
// median of that CPU's own probes in the run:
//
//   slowest  = the largest (probe time / its CPU's median) over the block's probes
//   spread   = the largest (relative probe time of one CPU / that of another) at one moment
//   together = the largest (time of the spins run on every CPU at once / its median)
//   slow     = any of the three > 1 + kSlowCpuShare
//
// `together` is there because one CPU at a time is not how a parallel block runs. In a run of
// the quick preset on this project's VM, for about two seconds every 2-thread variant of a
// configuration took 2.3-2.4x its usual time (steal-half 54 ms against 22; cpu_ns still twice
// wall_ns) while the 1-thread variants of the same blocks and every CPU's probe alone ran at
// their usual speed: the hypervisor ran the guest's two vCPUs at full speed one at a time, but
// not both at once (on one physical CPU, or on two hyperthreads of one core). A probe that spins
// on each CPU in turn cannot see that; spins on every CPU at once, started together, take twice
// as long when the CPUs take turns.
//
// Consecutive block repetitions share the probe between them, so a run pays about one probe per
// block repetition (the sidecar's `speed_probe` gives its cost).
//
// The median is the CPU's own, so CPUs of different speeds (big and little cores) are each
// judged against themselves. Rows are written as each block repetition ends, so "the median
// over the run" is the median of the probes so far, these included, seeded by kCalibration
// probes of each CPU when the run starts: a run that starts inside a slow phase judges its
// first blocks against a slow median (the sidecar's `speed_probe` gives the medians at the end,
// and each row carries its figures, so such a run can be spotted).
//
// What a probe sees: a phase that slows a CPU for longer than a probe (a busy hyperthread
// sibling or a frequency drop on the host, a vCPU descheduled by the hypervisor while the probe
// runs), or keeps the CPUs from running at once. What it cannot see: a phase shorter than the gap between two probes that falls between
// them, or another guest process sharing a CPU (the kernel lets a freshly pinned probe run ahead
// of it; `noisy` catches those).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

namespace schedlab {

// A block repetition is flagged `slow_cpu` when a CPU's probe ran more than this share slower
// than that CPU's median, or two CPUs' relative speeds differed by more than it. A quarter: on an
// idle guest the slowest probe of a block repetition stays within 1.5% of its median in 9 of 10
// (docs/platform.md), while a CPU at three quarters of its speed for a block shifts a
// comparison by more than the 5-10% that most claims count, and the phases seen run at half speed.
inline constexpr double kSlowCpuShare = 0.25;

// The probe's figures for one block repetition: slowest, spread and together as above (1.0: as
// fast as usual; together NaN with one CPU), and the flag.
struct SpeedVerdict {
  double slowest = 1.0;
  double spread = 1.0;
  double together = 1.0;
  bool slow = false;
};

class SpinGang;

class SpeedProbe {
 public:
  // One probe: a time per CPU, in the order of cpus(), and the time of the spins on every CPU at
  // once (NaN with one CPU). Nanoseconds.
  struct Point {
    std::vector<double> per_cpu;
    double together = NAN;
  };

  // Probes every CPU this process may use (cpu_pin.hpp's allowed_cpus), kCalibration times.
  // Starts one thread per CPU for the spins at once, pinned there and asleep between probes.
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
  // The verdict on a block repetition from the probes before and after it, against each CPU's
  // median so far (these two points included).
  SpeedVerdict judge(const Point& before, const Point& after);
  // Whether a probe taken now, judged by the same rule but recorded nowhere (neither in the
  // medians nor in the counts), is unflagged: the runner waits for this before replacements.
  bool steady_now();

  const std::vector<int>& cpus() const { return cpus_; }
  // For the sidecar: the spin, the CPUs and their medians over the run, the threshold, and what
  // the probe cost (wall time per block repetition, both points together).
  nlohmann::json summary() const;

 private:
  // Times the spin on each CPU, the calling thread pinned there for the spin and given its own
  // CPU mask back after, then on every CPU at once (the gang). Executed only by the runner's
  // thread, between measurements.
  Point probe(bool record = true);
  // judge()'s rule, counting nothing.
  SpeedVerdict verdict(const Point& before, const Point& after) const;
  static double median_of(std::vector<double> h);

  std::vector<int> cpus_;
  std::unique_ptr<SpinGang> gang_;            // null with one CPU
  std::vector<std::vector<double>> history_;  // [cpu][probe]: every probe time of the run, ns
  std::vector<double> together_history_;      // every gang time of the run, ns
  double spent_ns_ = 0;                       // wall time of every probe() so far, calibration excluded
  std::uint64_t judged_ = 0, flagged_ = 0;    // block repetitions judged, and flagged
  Point last_;                                // the last end()
  bool fresh_ = false;                        // nothing ran since last_
};

}  // namespace schedlab
