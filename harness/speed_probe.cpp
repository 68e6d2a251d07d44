// speed_probe.cpp: the spin, the pinning and the verdict (see speed_probe.hpp).
#include "speed_probe.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "assert.hpp"
#include "cpu_pin.hpp"
#include "spin.hpp"

namespace schedlab {
namespace {

// The fixed work: 2^16 dependent increments (spin.hpp, one add each), about 20-40 µs on a 2-4 GHz
// core: well under a millisecond, and a thousand times what reading the clock costs.
constexpr std::uint64_t kSpinIterations = std::uint64_t{1} << 16;
// Spins per CPU per probe; the probe's time is their median, so that one interrupt landing in
// one spin does not read as a slow CPU, while a CPU slow through the probe still does.
constexpr int kSpinsPerProbe = 3;
// Probes of each CPU when the run starts, before any block: the median's first values.
constexpr int kCalibration = 5;

double spin_ns() {
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t done = count_up(kSpinIterations);
  const auto t1 = std::chrono::steady_clock::now();
  SCHEDLAB_ASSERT(done == kSpinIterations, "the spin ran every iteration");
  return std::chrono::duration<double, std::nano>(t1 - t0).count();
}

// The median of a few spins of the calling thread on `cpu`, or NaN if the kernel refused the pin.
double probe_cpu(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  const ScopedPin pin(one);
  if (pin.error() != 0) return NAN;
  double spins[kSpinsPerProbe];
  for (double& s : spins) s = spin_ns();
  std::nth_element(spins, spins + kSpinsPerProbe / 2, spins + kSpinsPerProbe);
  return spins[kSpinsPerProbe / 2];
}

}  // namespace

SpeedProbe::SpeedProbe() : cpus_(allowed_cpus()), history_(cpus_.size()) {
  for (int i = 0; i < kCalibration; ++i) (void)probe();
  spent_ns_ = 0;
}

SpeedProbe::Point SpeedProbe::probe() {
  const auto t0 = std::chrono::steady_clock::now();
  Point p(cpus_.size());
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    p[i] = probe_cpu(cpus_[i]);
    if (!std::isnan(p[i])) history_[i].push_back(p[i]);
  }
  spent_ns_ += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

double SpeedProbe::median(std::size_t cpu) const {
  std::vector<double> h = history_[cpu];
  if (h.empty()) return NAN;
  std::nth_element(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(h.size() / 2), h.end());
  return h[h.size() / 2];
}

SpeedVerdict SpeedProbe::judge(const Point& before, const Point& after) {
  std::vector<double> medians(cpus_.size());
  for (std::size_t i = 0; i < cpus_.size(); ++i) medians[i] = median(i);
  SpeedVerdict v;
  for (const Point* p : {&before, &after}) {
    double fastest = INFINITY, slowest = 0;
    for (std::size_t i = 0; i < p->size(); ++i) {
      const double relative = (*p)[i] / medians[i];
      if (std::isnan(relative)) continue;  // a CPU the kernel would not pin to: no figure
      fastest = std::min(fastest, relative);
      slowest = std::max(slowest, relative);
    }
    if (slowest == 0) continue;
    v.slowest = std::max(v.slowest, slowest);
    v.spread = std::max(v.spread, slowest / fastest);
  }
  v.slow = v.slowest > 1 + kSlowCpuShare || v.spread > 1 + kSlowCpuShare;
  ++judged_;
  if (v.slow) ++flagged_;
  return v;
}

nlohmann::json SpeedProbe::summary() const {
  nlohmann::json medians = nlohmann::json::object();
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    const double m = median(i);
    medians[std::to_string(cpus_[i])] = std::isnan(m) ? nlohmann::json() : nlohmann::json(m);
  }
  const double per_block = judged_ == 0 ? 0 : spent_ns_ / static_cast<double>(judged_);
  return {{"what", "median of " + std::to_string(kSpinsPerProbe) + " spins of " + std::to_string(kSpinIterations) +
                       " dependent increments, on each CPU in turn (the runner's thread pinned there), before and "
                       "after every block repetition"},
          {"cpus", cpus_},
          {"median_ns", medians},
          {"slow_share", kSlowCpuShare},
          {"block_repetitions", judged_},
          {"flagged", flagged_},
          {"cost_ns_per_block_repetition", per_block}};
}

}  // namespace schedlab
