// machine_timeline.hpp: the machine a run's numbers came from, as the run saw it over time.
//
// A reader of a benchmark's figures needs to know what the machine did while they were
// measured, said as what it was ("CPU 1 ran 1.52x slower than CPU 0 from 14:02:11 to 14:12:40
// UTC"), not as a count of flags. The runner adds every block repetition here (its start, its
// duration, other processes' share of each CPU, how many of its rows were flagged and why) and
// the speed probe keeps every probe; from them come
//   - the sidecar's `machine_timeline`: the probes (each CPU's absolute spin time, and the spins
//     at once), the block repetitions, and the episodes below; the report draws it;
//   - episodes: stretches of consecutive block repetitions in one state, each one sentence for
//     the summary `schedlab run` prints and for the report:
//       unequal    the CPUs' spin times differed by more than kUnequalCpuRatio (speed_probe.hpp)
//       in_turns   the spins at once took more than kInTurnsRatio of the slowest alone
//       others     other processes took more than kNoisyShare of one CPU (machine_load.hpp)
//       changes    a CPU's speed changed during the block repetition (rows flagged slow_cpu)
//     Block repetitions less than kEpisodeGap apart belong to one episode.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "speed_probe.hpp"

namespace schedlab {

// Two qualifying block repetitions at most this far apart (seconds, end of one to start of the
// next) are one episode: a run's blocks follow each other within milliseconds, while set-up
// between parts (building schedulers, preparing inputs) takes seconds.
inline constexpr double kEpisodeGap = 10;

class MachineTimeline {
 public:
  explicit MachineTimeline(std::vector<int> cpus) : cpus_(std::move(cpus)) {}

  // One block repetition: when it started, how long it took, other processes' share of each CPU
  // (BlockLoad::other_share_per_cpu), the probes around it, its rows and how many of them were
  // flagged noisy and slow_cpu. Executed only by the runner's thread.
  void add_block(double unix_s, double duration_s, std::vector<double> other_share, const SpeedProbe::Point& before,
                 const SpeedProbe::Point& after, unsigned rows, unsigned noisy_rows, unsigned slow_rows);

  struct Episode {
    std::string kind;  // unequal, in_turns, others, changes
    int cpu = -1;      // the slow CPU (unequal), the busy one (others); -1 otherwise
    int reference_cpu = -1;  // unequal: the fastest CPU
    double from_unix_s = 0, to_unix_s = 0;
    unsigned blocks = 0;
    double median = 0;  // the ratio (unequal, in_turns), the share (others), the change (changes)
    std::string text;   // one sentence
  };
  std::vector<Episode> episodes() const;

  // The timeline file's content (metadata.hpp: machine_timeline_path_for): `probes` (every probe
  // point of the run) and `blocks`, column by column, and the episodes. One line of JSON: a
  // quick preset's is a few hundred KB, too long for the sidecar, which names the file and
  // carries the episodes (sidecar_json).
  nlohmann::json json(const std::vector<SpeedProbe::Point>& probes) const;
  // The sidecar's `machine_timeline`: the episodes, the rule that shows them, and the file (or
  // why it could not be written: `file_error`).
  nlohmann::json sidecar_json(const std::string& file, const std::string& file_error) const;

 private:
  struct BlockEntry {
    double unix_s, duration_s;
    std::vector<double> other_share;  // per CPU, NaN where unknown
    double spread;                    // all CPUs, absolute, before or after (the larger)
    int slowest, fastest;             // CPU numbers at the larger spread
    double together;                  // NaN with one CPU
    unsigned rows, noisy_rows, slow_rows;
  };
  std::vector<int> cpus_;
  std::vector<BlockEntry> blocks_;
};

// The lines the summary of `schedlab run` prints about the machine: each episode of at least
// kEpisodeShownBlocks block repetitions, the shorter ones counted, or one line saying the
// machine stayed quiet.
inline constexpr unsigned kEpisodeShownBlocks = 3;
std::string describe_machine(const std::vector<MachineTimeline::Episode>& episodes);

// "14:02:11" (UTC) for a CLOCK_REALTIME second.
std::string utc_clock(double unix_s);

}  // namespace schedlab
