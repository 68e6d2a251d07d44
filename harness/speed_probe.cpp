// speed_probe.cpp: the spin, the pinning and the verdict (see speed_probe.hpp).
#include "speed_probe.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <mutex>
#include <thread>

#include "assert.hpp"
#include "cpu_relax.hpp"
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
// Probes of each CPU when the run starts, before any block: the CPUs' speeds at the start (their
// median) and the first changes the usual change is read from (speed_probe.hpp). Nine: eight
// changes, so that the first blocks are judged against the largest of eight, not of four (a new
// change beyond the largest of n comes with probability 1 / (n + 1) on a machine that flickers
// alike throughout: a fifth of the first blocks flagged with four). ~0.3 ms a probe.
constexpr int kCalibration = 9;

double median_of(std::vector<double> h) {
  if (h.empty()) return NAN;
  std::nth_element(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(h.size() / 2), h.end());
  return h[h.size() / 2];
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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

// The spins on every CPU at once: one thread pinned to each CPU, asleep between probes. A probe
// wakes them all; then, kSpinsPerProbe times, they meet at a spinning barrier (so that no spin
// starts while another CPU is still waking up, which takes tens of microseconds on a VM) and each
// times one spin. A round's time runs from the first start to the last end, and the probe's time
// is the median round. When the CPUs can run only in turns, one thread's spin or its wait at the
// barrier holds the CPU that another needs, and a round takes at least two spins' time.
class SpinGang {
 public:
  explicit SpinGang(const std::vector<int>& cpus) : starts_(cpus.size()), ends_(cpus.size()) {
    SCHEDLAB_ASSERT(cpus.size() > 1, "a gang of one CPU measures nothing a probe alone does not");
    for (std::size_t i = 0; i < cpus.size(); ++i) threads_.emplace_back([this, i, cpu = cpus[i]] { member(i, cpu); });
  }
  ~SpinGang() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    woken_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  SpinGang(const SpinGang&) = delete;
  SpinGang& operator=(const SpinGang&) = delete;

  // The median round's time, ns; NaN if the kernel refused to pin a member. Executed only by the
  // runner's thread, one call at a time.
  double run() {
    {
      const std::lock_guard lock(mutex_);
      finished_ = 0;
      ++generation_;
    }
    woken_.notify_all();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return finished_ == threads_.size(); });
    if (pin_refused_) return NAN;
    std::array<double, kSpinsPerProbe> rounds;
    for (int k = 0; k < kSpinsPerProbe; ++k) {
      Clock::time_point first = starts_[0][k], last = ends_[0][k];
      for (std::size_t i = 1; i < threads_.size(); ++i) {
        first = std::min(first, starts_[i][k]);
        last = std::max(last, ends_[i][k]);
      }
      rounds[k] = std::chrono::duration<double, std::nano>(last - first).count();
    }
    std::nth_element(rounds.begin(), rounds.begin() + kSpinsPerProbe / 2, rounds.end());
    return rounds[kSpinsPerProbe / 2];
  }

 private:
  using Clock = std::chrono::steady_clock;

  void member(std::size_t i, int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    const ScopedPin pin(one);
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        woken_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        if (pin.error() != 0) pin_refused_ = true;
      }
      for (int k = 0; k < kSpinsPerProbe; ++k) {
        meet();
        starts_[i][k] = Clock::now();
        const std::uint64_t done = count_up(kSpinIterations);
        ends_[i][k] = Clock::now();
        SCHEDLAB_ASSERT(done == kSpinIterations, "the spin ran every iteration");
      }
      {
        const std::lock_guard lock(mutex_);
        ++finished_;
      }
      done_.notify_one();
    }
  }

  // A sense-reversing spinning barrier for the members: the last to arrive opens the next round.
  void meet() {
    const std::uint32_t round = round_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_.size()) {
      arrived_.store(0, std::memory_order_relaxed);
      round_.store(round + 1, std::memory_order_release);
      return;
    }
    while (round_.load(std::memory_order_acquire) == round) {
      cpu_relax();
    }
  }

  std::mutex mutex_;
  std::condition_variable woken_, done_;
  std::uint64_t generation_ = 0;  // probes asked for; under mutex_
  std::size_t finished_ = 0;      // members done with this probe; under mutex_
  bool stopping_ = false;         // under mutex_
  bool pin_refused_ = false;      // under mutex_
  std::atomic<std::size_t> arrived_{0};
  std::atomic<std::uint32_t> round_{0};
  // [member][round]: written by the member during a probe, read by run() after every member has
  // finished it (the mutex orders the two).
  std::vector<std::array<Clock::time_point, kSpinsPerProbe>> starts_, ends_;
  std::vector<std::thread> threads_;  // last: started once everything they use exists
};

std::optional<ProbeScale> probe_scale_from_env() {
  const char* text = std::getenv(kProbeScaleEnv);
  if (text == nullptr || *text == '\0') return std::nullopt;
  ProbeScale s;
  char tail = '\0';
  const std::string value(text);
  int fields = 0;
  if (value.find('@') == std::string::npos) {
    fields = std::sscanf(text, "%d:%lf%c", &s.cpu, &s.factor, &tail);
    if (fields == 2 && s.cpu >= 0 && s.factor > 0) return s;
  } else {
    fields = std::sscanf(text, "%d:%lf@%lf%c", &s.cpu, &s.factor, &s.after_s, &tail);
    if (fields == 3 && s.cpu >= 0 && s.factor > 0 && s.after_s >= 0) return s;
  }
  throw std::invalid_argument(std::string(kProbeScaleEnv) + "=" + value +
                              ": expected CPU:FACTOR or CPU:FACTOR@SECONDS (e.g. 1:1.5@60); unset it for a real run");
}

SpeedProbe::SpeedProbe()
    : cpus_(allowed_cpus()),
      scale_(probe_scale_from_env()),
      started_unix_s_(unix_now()) {
  if (cpus_.size() > 1) gang_ = std::make_unique<SpinGang>(cpus_);
  for (int i = 0; i < kCalibration; ++i) (void)probe();
  calibration_.resize(cpus_.size());
  for (std::size_t c = 0; c < cpus_.size(); ++c) {
    std::vector<double> mine;
    for (const Point& p : points_) {
      if (!std::isnan(p.per_cpu[c])) mine.push_back(p.per_cpu[c]);
    }
    calibration_[c] = median_of(std::move(mine));
  }
  spent_ns_ = 0;
}

SpeedProbe::~SpeedProbe() = default;

void SpeedProbe::apply_test_scale(Point& p) const {
  if (!scale_ || p.unix_s - started_unix_s_ < scale_->after_s) return;
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    if (cpus_[i] == scale_->cpu) {
      p.per_cpu[i] *= scale_->factor;
      // The gang's round waits for its slowest member: a slower CPU lengthens it alike.
      if (scale_->factor > 1) p.together *= scale_->factor;
    }
  }
}

SpeedProbe::Point SpeedProbe::probe(bool record) {
  const auto t0 = std::chrono::steady_clock::now();
  Point p{std::vector<double>(cpus_.size()), NAN, unix_now()};
  for (std::size_t i = 0; i < cpus_.size(); ++i) p.per_cpu[i] = probe_cpu(cpus_[i]);
  if (gang_) p.together = gang_->run();
  apply_test_scale(p);
  if (record) {
    points_.push_back(p);
    spent_ns_ += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }
  return p;
}

namespace {

// max(a / b, b / a), or 1 when either is not a figure (a CPU the kernel would not pin to).
double either_way(double a, double b) {
  if (!(a > 0) || !(b > 0)) return 1.0;
  return std::max(a / b, b / a);
}

}  // namespace

SpeedVerdict SpeedProbe::verdict(const Point& before, const Point& after, const std::vector<unsigned>& cpus,
                                  double usual) {
  SCHEDLAB_ASSERT(usual >= 1, "a change is a ratio either way: at least 1");
  SpeedVerdict v;
  v.usual = usual;
  for (unsigned i : cpus) {
    SCHEDLAB_ASSERT(i < before.per_cpu.size() && i < after.per_cpu.size(), "a row's CPU is one the probe measured");
    v.change = std::max(v.change, either_way(before.per_cpu[i], after.per_cpu[i]));
  }
  if (cpus.size() > 1) {
    v.change = std::max(v.change, either_way(before.together, after.together));
    v.together = 0;
    for (const Point* p : {&before, &after}) {
      double fastest = INFINITY, slowest = 0;
      for (unsigned i : cpus) {
        if (!(p->per_cpu[i] > 0)) continue;
        fastest = std::min(fastest, p->per_cpu[i]);
        slowest = std::max(slowest, p->per_cpu[i]);
      }
      if (slowest == 0) continue;
      v.spread = std::max(v.spread, slowest / fastest);
      if (p->together > 0) v.together = std::max(v.together, p->together / slowest);
    }
    if (v.together == 0) v.together = NAN;
  }
  v.slow = v.change > std::max(1 + kSlowCpuShare, usual);
  return v;
}

double SpeedProbe::usual_change(const std::vector<Point>& points, std::size_t end, const std::vector<unsigned>& cpus) {
  SCHEDLAB_ASSERT(end <= points.size(), "the window ends inside the run's probes");
  if (end < 2) return 1.0;
  const std::size_t first = end - 1 > kUsualWindow ? end - 1 - kUsualWindow : 0;
  std::vector<double> changes;
  for (std::size_t i = first; i + 1 < end; ++i) changes.push_back(verdict(points[i], points[i + 1], cpus).change);
  // Nearest rank: the smallest change at least kUsualQuantile of them do not exceed.
  const auto rank = static_cast<std::size_t>(std::ceil(kUsualQuantile * static_cast<double>(changes.size())));
  std::nth_element(changes.begin(), changes.begin() + static_cast<std::ptrdiff_t>(rank - 1), changes.end());
  return changes[rank - 1];
}

nlohmann::json SpeedProbe::summary() const {
  const auto number = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  nlohmann::json at_start = nlohmann::json::object();
  double fastest = INFINITY, slowest = 0;
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    at_start[std::to_string(cpus_[i])] = number(calibration_[i]);
    if (calibration_[i] > 0) {
      fastest = std::min(fastest, calibration_[i]);
      slowest = std::max(slowest, calibration_[i]);
    }
  }
  const double per_block = judged_ == 0 ? 0 : spent_ns_ / static_cast<double>(judged_);
  nlohmann::json out = {
      {"what", "median of " + std::to_string(kSpinsPerProbe) + " spins of " + std::to_string(kSpinIterations) +
                   " dependent increments, on each CPU in turn (the runner's thread pinned there), then on "
                   "every CPU at once (a thread pinned to each, the spins of a round started together; the "
                   "round's time from the first start to the last end), before and after every block "
                   "repetition"},
      {"rule", "a row is flagged slow_cpu when one of its CPUs' probe (or the spins at once, for a case on several "
               "CPUs) changed by more than slow_share either way between the probes before and after its block "
               "repetition, and by more than the usual change (probe_usual: the usual_quantile of the changes "
               "between consecutive probes on those CPUs, over the usual_window pairs before the block); probe_spread is the slowest of its CPUs over the fastest (absolute), probe_together "
               "the spins at once over the slowest CPU alone; a comparison of P threads with 1 thread is not "
               "judged on a block whose probe_spread is above unequal_ratio or whose probe_together is above "
               "in_turns_ratio"},
      {"cpus", cpus_},
      {"calibration_ns", at_start},
      {"calibration_spread", slowest > 0 ? nlohmann::json(slowest / fastest) : nlohmann::json()},
      {"slow_share", kSlowCpuShare},
      {"usual_quantile", kUsualQuantile},
      {"usual_window", kUsualWindow},
      {"unequal_ratio", kUnequalCpuRatio},
      {"in_turns_ratio", kInTurnsRatio},
      {"block_repetitions", judged_},
      {"flagged", flagged_},
      {"cost_ns_per_block_repetition", per_block}};
  if (scale_) {
    out["test_scale"] = {{"cpu", scale_->cpu}, {"factor", scale_->factor}, {"after_s", scale_->after_s},
                         {"what", std::string("set by the test hook ") + kProbeScaleEnv +
                                      ": the CPU's probe readings were multiplied, its real speed was not"}};
  }
  return out;
}

}  // namespace schedlab
