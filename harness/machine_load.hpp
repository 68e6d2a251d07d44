// machine_load.hpp: what else used the CPUs a case ran on during its block repetition.
//
// A shared machine lends its CPUs to other processes; a repetition during which they took more
// than kNoisyShare of the CPUs it ran on is flagged `noisy`, and the claims leave it out. "The
// CPUs it ran on" matters: a 1-thread case pinned to CPU 0 is not disturbed by a co-tenant on
// CPU 1 (on a fresh cloud VM, flags for the whole machine left out 62% of the 1-thread
// repetitions for a CPU they never ran on). So each row is judged on its own CPUs (case_cpus).
//
// What can be measured. /proc/stat gives each CPU's busy time (user, nice, system, irq, softirq)
// in clock ticks; getrusage gives this process's CPU time exactly, but not per CPU. The runner
// samples /proc/stat when a block repetition starts and ends, and this process's CPU time and
// the clock around every case of it (a segment). Other processes' time on a set S of CPUs over
// the block is then
//
//     busy(S) - own time on S,   own time on S <= sum over segments of min(own, |S & CPUs| x dur)
//
// where CPUs are the segment's case's (all CPUs between cases, when the harness thread may run
// anywhere): this process cannot have used more of S in a segment than it used in all, nor more
// than |S & CPUs| CPUs for the segment's duration. Subtracting that bound gives a lower bound on
// other processes' time: a row is never flagged for its own process's work on another CPU,
// while a co-tenant on one of its CPUs shows in full during the segments that do not use that
// CPU, and at least in part during the others. Its exact value for a case confined to S alone:
// busy(S) minus the case's own time.
//
// Resolution: /proc/stat counts in ticks (1/USER_HZ s, 10 ms on common kernels), this process's
// time in nanoseconds; their difference is off by about a tick per CPU at each end, hence
// kNoisyMinTicks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace schedlab {

struct Case;

// A repetition is flagged noisy when other processes used more than this share of the CPU time
// of the CPUs its case ran on during its block repetition (other_cpu_ns / (the block's duration
// x its CPUs)). A tenth: enough to shift a comparison of two schedulers by more than the
// smallest effects the claims look for, and far above what the harness's own helper threads use.
inline constexpr double kNoisyShare = 0.10;
// ... and at least this many clock ticks of it: /proc/stat counts in ticks while this process's
// own time is exact, so their difference is off by up to about a tick per CPU at each end.
inline constexpr double kNoisyMinTicks = 3;

// What the machine was doing on one row's CPUs during its block repetition (every case of the
// block once: the unit of comparison), and how fast those CPUs ran (the speed probe,
// speed_probe.hpp, set by the runner).
struct MachineLoad {
  std::optional<double> loadavg_1m;      // at the start
  std::optional<double> other_cpu_ns;    // other processes on the row's CPUs (a lower bound, >= 0)
  std::optional<double> steal_ns;        // the hypervisor's steal on the row's CPUs, if reported
  std::optional<bool> noisy;             // other_cpu_ns above kNoisyShare (and kNoisyMinTicks)
  std::optional<double> started_unix_s;  // when the block repetition began (CLOCK_REALTIME)
  std::optional<double> probe_change;    // SpeedVerdict::change
  std::optional<double> probe_usual;     // SpeedVerdict::usual
  std::optional<double> probe_spread;    // SpeedVerdict::spread
  std::optional<double> probe_together;  // SpeedVerdict::together; none for a case on one CPU
  std::optional<bool> slow_cpu;          // SpeedVerdict::slow

  // The claims leave the row out (scripts/schedlab_results/load.py, FLAGS).
  bool flagged() const { return noisy.value_or(false) || slow_cpu.value_or(false); }
};

// The CPUs a case's threads may run on, as indices into allowed_cpus() (the order of the speed
// probe and of BlockLoad): the first min(threads, usable) with --pin on (cpu_pin.hpp's rule for
// every backend; serial and the elision run on the first), every usable CPU otherwise (the
// kernel places the threads; go-runtime, which cannot be pinned).
std::vector<unsigned> case_cpus(const Case& c, unsigned usable);
// Every usable CPU, as indices.
std::vector<unsigned> all_cpus(unsigned usable);

// This process, its waited-for children (the go-runtime program, Valgrind) and its live A/B
// servers (add_live_child_cpu_ns), user + system.
double own_cpu_ns();

// The CPU time of this run's live children that measure for it (the A/B mode's build servers,
// served_subject.hpp) is this run's own, but getrusage(RUSAGE_CHILDREN) counts a child only once
// it has been waited for, at the end of the run: without this, every repetition's measured CPU
// (hundreds of ms in a long case) counted as another process's, and every block was flagged
// noisy. A server reports its CPU time with every reply; its BuildServer adds what is new here
// (`ns` may be negative: a server waited for moves from here to RUSAGE_CHILDREN). Executed only
// by the runner's thread, like BlockLoad.
void add_live_child_cpu_ns(double ns);

// The accounting of one block repetition (see the top of this file). Executed only by the
// runner's thread.
class BlockLoad {
 public:
  // Samples /proc/stat's line of each CPU this process may use (allowed_cpus()) and the clock.
  BlockLoad();
  // Around each case's measurement: `cpus` as case_cpus gives them.
  void case_begin();
  void case_end(const std::vector<unsigned>& cpus);
  // Samples /proc/stat again: the block repetition is over. Idempotent.
  void finish();
  // The load on `cpus` (indices) over the block repetition; after finish().
  MachineLoad on(const std::vector<unsigned>& cpus) const;
  // Other processes' share of each CPU alone over the block repetition (a lower bound, as
  // above); NaN for a CPU /proc/stat does not describe. After finish(). For the timeline.
  std::vector<double> other_share_per_cpu() const;
  double started_unix_s() const { return start_.unix_s; }
  double duration_s() const { return (end_.steady_ns - start_.steady_ns) / 1e9; }

  // One sample of the machine: per usable CPU (allowed_cpus() order) its /proc/stat busy and
  // steal ticks (-1 where /proc/stat has no such line or field), this process's CPU time and
  // the clocks.
  struct Sample {
    std::vector<double> busy_ticks, steal_ticks;
    double own_ns = 0, steady_ns = 0, unix_s = 0;
    std::optional<double> loadavg_1m;
  };
  static Sample sample(const std::vector<int>& cpus);

  // A stretch of the block with one set of CPUs this process could have run on: a case, or
  // the time between cases (every CPU).
  struct Segment {
    std::vector<unsigned> cpus;
    double own_ns, duration_ns;
  };
  // Other processes' time on `cpus` given those CPUs' busy time over the block and the block's
  // segments: busy minus the most this process can have used of them (the bound at the top of
  // this file), never below 0. Pure.
  static double others_on(double busy_ns, const std::vector<Segment>& segments, const std::vector<unsigned>& cpus);

 private:
  void close_gap_until(double steady_ns, double own_ns);

  std::vector<int> cpus_;  // allowed_cpus()
  Sample start_, end_;
  std::vector<Segment> segments_;
  double mark_steady_ns_ = 0, mark_own_ns_ = 0;  // the end of the last segment
  bool finished_ = false;
};

}  // namespace schedlab
