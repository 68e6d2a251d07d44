// machine_timeline.cpp: block repetitions recorded, episodes found (see machine_timeline.hpp).
#include "machine_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <functional>
#include <sstream>

#include "assert.hpp"
#include "machine_load.hpp"

namespace schedlab {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// x rounded to `digits` decimals, for a sidecar that stays small over thousands of blocks.
nlohmann::json rounded(double x, int digits) {
  if (!std::isfinite(x)) return nullptr;
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

std::string fixed(double v, int precision) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(precision);
  s << v;
  return s.str();
}

nlohmann::json episodes_json(const std::vector<MachineTimeline::Episode>& all, unsigned at_least, unsigned& shorter) {
  nlohmann::json episodes = nlohmann::json::array();
  shorter = 0;
  for (const MachineTimeline::Episode& e : all) {
    if (e.blocks < at_least) {
      ++shorter;
      continue;
    }
    episodes.push_back({{"kind", e.kind},
                        {"cpu", e.cpu < 0 ? nlohmann::json() : nlohmann::json(e.cpu)},
                        {"reference_cpu", e.reference_cpu < 0 ? nlohmann::json() : nlohmann::json(e.reference_cpu)},
                        {"from_unix_s", rounded(e.from_unix_s, 3)},
                        {"to_unix_s", rounded(e.to_unix_s, 3)},
                        {"blocks", e.blocks},
                        {"median", rounded(e.median, 3)},
                        {"text", e.text}});
  }
  return episodes;
}

}  // namespace

std::string utc_clock(double unix_s) {
  const auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &tm);
  return text;
}

void MachineTimeline::add_block(double unix_s, double duration_s, std::vector<double> other_share,
                                const SpeedProbe::Point& before, const SpeedProbe::Point& after, unsigned rows,
                                unsigned noisy_rows, unsigned slow_rows) {
  SCHEDLAB_ASSERT(other_share.size() == cpus_.size(), "a share per CPU of the timeline");
  BlockEntry e{unix_s, duration_s, std::move(other_share), 1.0, -1, -1, NAN, rows, noisy_rows, slow_rows};
  for (const SpeedProbe::Point* p : {&before, &after}) {
    std::size_t slow = 0, fast = 0;
    bool any = false;
    for (std::size_t i = 0; i < p->per_cpu.size(); ++i) {
      if (!(p->per_cpu[i] > 0)) continue;
      if (!any || p->per_cpu[i] > p->per_cpu[slow]) slow = i;
      if (!any || p->per_cpu[i] < p->per_cpu[fast]) fast = i;
      any = true;
    }
    if (!any) continue;
    const double spread = p->per_cpu[slow] / p->per_cpu[fast];
    if (e.slowest < 0 || spread > e.spread) {
      e.spread = spread;
      e.slowest = cpus_[slow];
      e.fastest = cpus_[fast];
    }
    if (p->together > 0) {
      const double together = p->together / p->per_cpu[slow];
      e.together = std::isnan(e.together) ? together : std::max(e.together, together);
    }
  }
  blocks_.push_back(std::move(e));
}

std::vector<MachineTimeline::Episode> MachineTimeline::episodes() const {
  std::vector<Episode> out;
  // Episodes of one kind (and key, such as the slow CPU): `value` gives a block's figure, or NaN
  // when the block is not in that state.
  const auto find = [&](const std::string& kind, int key, const std::function<double(const BlockEntry&)>& value,
                        const std::function<void(Episode&)>& describe) {
    Episode current;
    std::vector<double> values;
    double last_end = -INFINITY;
    const auto close = [&] {
      if (current.blocks == 0) return;
      current.median = median(values);
      describe(current);
      out.push_back(current);
      current = Episode{};
      values.clear();
    };
    for (const BlockEntry& b : blocks_) {
      const double v = value(b);
      if (std::isnan(v)) continue;
      if (current.blocks > 0 && b.unix_s - last_end > kEpisodeGap) close();
      if (current.blocks == 0) {
        current.kind = kind;
        current.cpu = key;
        current.from_unix_s = b.unix_s;
      }
      if (kind == "unequal") current.reference_cpu = b.fastest;
      ++current.blocks;
      current.to_unix_s = b.unix_s + b.duration_s;
      last_end = current.to_unix_s;
      values.push_back(v);
    }
    close();
  };
  const auto span = [](const Episode& e) {
    return "from " + utc_clock(e.from_unix_s) + " to " + utc_clock(e.to_unix_s) + " UTC (" + std::to_string(e.blocks) +
           (e.blocks == 1 ? " block repetition)" : " block repetitions)");
  };
  for (int cpu : cpus_) {
    find("unequal", cpu,
         [cpu](const BlockEntry& b) { return b.spread > kUnequalCpuRatio && b.slowest == cpu ? b.spread : NAN; },
         [&](Episode& e) {
           e.text = "CPU " + std::to_string(e.cpu) + " ran " + fixed(e.median, 2) + "x slower than CPU " +
                    std::to_string(e.reference_cpu) + " (the same spin, median) " + span(e) +
                    ": comparisons of a run at P threads with one at 1 thread are not judged on them";
         });
  }
  find("in_turns", -1, [](const BlockEntry& b) { return b.together > kInTurnsRatio ? b.together : NAN; },
       [&](Episode& e) {
         e.text = "the CPUs ran in turns, not at once (spins on every CPU at once took " + fixed(e.median, 2) +
                  "x the slowest CPU's alone, median) " + span(e) +
                  ": comparisons of a run at P threads with one at 1 thread are not judged on them";
       });
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    find("others", cpus_[i],
         [i](const BlockEntry& b) { return b.other_share[i] > kNoisyShare ? b.other_share[i] : NAN; },
         [&](Episode& e) {
           e.text = "other processes took " + fixed(100 * e.median, 0) + "% of CPU " + std::to_string(e.cpu) +
                    " (median) " + span(e) + ": the rows that ran on CPU " + std::to_string(e.cpu) +
                    " then are flagged noisy";
         });
  }
  find("changes", -1, [](const BlockEntry& b) { return b.slow_rows > 0 ? 1.0 : NAN; },
       [&](Episode& e) {
         e.text = "a CPU's speed changed by more than " + fixed(100 * kSlowCpuShare, 0) + "% during block repetitions, beyond its usual change between probes then, " +
                  span(e) + ": their rows on that CPU are flagged slow_cpu";
       });
  std::stable_sort(out.begin(), out.end(), [](const Episode& a, const Episode& b) { return a.from_unix_s < b.from_unix_s; });
  return out;
}

nlohmann::json MachineTimeline::json(const std::vector<SpeedProbe::Point>& probes) const {
  nlohmann::json p_unix = nlohmann::json::array(), p_together = nlohmann::json::array();
  std::vector<nlohmann::json> p_ns(cpus_.size(), nlohmann::json::array());
  for (const SpeedProbe::Point& p : probes) {
    p_unix.push_back(rounded(p.unix_s, 3));
    for (std::size_t i = 0; i < cpus_.size(); ++i) p_ns[i].push_back(rounded(p.per_cpu[i], 0));
    p_together.push_back(rounded(p.together, 0));
  }
  nlohmann::json b_unix = nlohmann::json::array(), b_dur = nlohmann::json::array(), rows = nlohmann::json::array(),
                 noisy = nlohmann::json::array(), slow = nlohmann::json::array();
  std::vector<nlohmann::json> shares(cpus_.size(), nlohmann::json::array());
  for (const BlockEntry& b : blocks_) {
    b_unix.push_back(rounded(b.unix_s, 3));
    b_dur.push_back(rounded(b.duration_s, 4));
    for (std::size_t i = 0; i < cpus_.size(); ++i) shares[i].push_back(rounded(b.other_share[i], 3));
    rows.push_back(b.rows);
    noisy.push_back(b.noisy_rows);
    slow.push_back(b.slow_rows);
  }
  return {{"what", "every probe of the speed probe (each CPU's time for the same spin, ns, and the spins on every CPU "
                   "at once) and every block repetition (its start, its duration, other processes' share of each "
                   "CPU as a lower bound, its rows and how many were flagged noisy and slow_cpu), in the order of "
                   "`cpus`; episodes: consecutive block repetitions in one state, less than " +
                       fixed(kEpisodeGap, 0) + " s apart"},
          {"cpus", cpus_},
          {"probes", {{"unix_s", p_unix}, {"ns", p_ns}, {"together_ns", p_together}}},
          {"blocks",
           {{"unix_s", b_unix},
            {"duration_s", b_dur},
            {"other_share", shares},
            {"rows", rows},
            {"noisy_rows", noisy},
            {"slow_rows", slow}}},
          {"episodes", [this] {
             unsigned shorter = 0;
             return episodes_json(episodes(), 0, shorter);
           }()}};
}


nlohmann::json MachineTimeline::sidecar_json(const std::string& file, const std::string& file_error) const {
  unsigned shorter = 0;
  const nlohmann::json shown = episodes_json(episodes(), kEpisodeShownBlocks, shorter);
  nlohmann::json out = {{"episodes", shown},
                        {"shorter_episodes", shorter},
                        {"shown_blocks", kEpisodeShownBlocks},
                        {"rule", "episodes: consecutive block repetitions in one state (CPUs of unequal speed, CPUs in "
                                 "turns, other processes on one CPU, a speed change during the block), less than " +
                                     fixed(kEpisodeGap, 0) + " s apart; `episodes` lists those of shown_blocks block "
                                     "repetitions or more and `shorter_episodes` counts the others (the file has them "
                                     "all)"}};
  if (!file.empty()) out["file"] = file;
  if (!file_error.empty()) out["file_error"] = file_error;
  return out;
}

std::string describe_machine(const std::vector<MachineTimeline::Episode>& episodes) {
  std::ostringstream out;
  out << "\nThe machine (the speed probe and /proc/stat, per CPU and block repetition; the sidecar's machine_timeline "
         "has every one):\n";
  unsigned shorter = 0;
  for (const MachineTimeline::Episode& e : episodes) {
    if (e.blocks >= kEpisodeShownBlocks) {
      out << "  " << e.text << "\n";
    } else {
      ++shorter;
    }
  }
  if (shorter > 0) {
    out << "  and " << shorter << " shorter episode" << (shorter == 1 ? "" : "s") << " (1-" << kEpisodeShownBlocks - 1
        << " block repetitions each)\n";
  }
  if (episodes.empty()) {
    out << "  its CPUs ran at the same speed (within " << fixed(100 * (kUnequalCpuRatio - 1), 0)
        << "%), at once, with none changing speed during a block repetition and no other process taking more "
           "than "
        << fixed(100 * kNoisyShare, 0) << "% of one\n";
  }
  return out.str();
}

}  // namespace schedlab
