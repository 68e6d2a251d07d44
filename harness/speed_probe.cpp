// speed_probe.cpp: the spin, the pinning and the verdict (see speed_probe.hpp).
#include "speed_probe.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
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

SpeedProbe::SpeedProbe() : cpus_(allowed_cpus()), history_(cpus_.size()) {
  if (cpus_.size() > 1) gang_ = std::make_unique<SpinGang>(cpus_);
  for (int i = 0; i < kCalibration; ++i) (void)probe();
  spent_ns_ = 0;
}

SpeedProbe::~SpeedProbe() = default;

SpeedProbe::Point SpeedProbe::probe(bool record) {
  const auto t0 = std::chrono::steady_clock::now();
  Point p{std::vector<double>(cpus_.size()), NAN};
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    p.per_cpu[i] = probe_cpu(cpus_[i]);
    if (record && !std::isnan(p.per_cpu[i])) history_[i].push_back(p.per_cpu[i]);
  }
  if (gang_) {
    p.together = gang_->run();
    if (record && !std::isnan(p.together)) together_history_.push_back(p.together);
  }
  if (record) spent_ns_ += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

bool SpeedProbe::steady_now() {
  const Point now = probe(/*record=*/false);
  invalidate();  // the next block repetition's start is probed anew, and recorded
  return !verdict(now, now).slow;
}

double SpeedProbe::median_of(std::vector<double> h) {
  if (h.empty()) return NAN;
  std::nth_element(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(h.size() / 2), h.end());
  return h[h.size() / 2];
}

SpeedVerdict SpeedProbe::judge(const Point& before, const Point& after) {
  const SpeedVerdict v = verdict(before, after);
  ++judged_;
  if (v.slow) ++flagged_;
  return v;
}

SpeedVerdict SpeedProbe::verdict(const Point& before, const Point& after) const {
  std::vector<double> medians(cpus_.size());
  for (std::size_t i = 0; i < cpus_.size(); ++i) medians[i] = median_of(history_[i]);
  const double together_median = median_of(together_history_);
  SpeedVerdict v;
  if (!gang_) v.together = NAN;
  for (const Point* p : {&before, &after}) {
    if (gang_ && !std::isnan(p->together)) v.together = std::max(v.together, p->together / together_median);
    double fastest = INFINITY, slowest = 0;
    for (std::size_t i = 0; i < p->per_cpu.size(); ++i) {
      const double relative = p->per_cpu[i] / medians[i];
      if (std::isnan(relative)) continue;  // a CPU the kernel would not pin to: no figure
      fastest = std::min(fastest, relative);
      slowest = std::max(slowest, relative);
    }
    if (slowest == 0) continue;
    v.slowest = std::max(v.slowest, slowest);
    v.spread = std::max(v.spread, slowest / fastest);
  }
  v.slow = v.slowest > 1 + kSlowCpuShare || v.spread > 1 + kSlowCpuShare ||
           (!std::isnan(v.together) && v.together > 1 + kSlowCpuShare);
  return v;
}

nlohmann::json SpeedProbe::summary() const {
  const auto number = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
  nlohmann::json medians = nlohmann::json::object();
  for (std::size_t i = 0; i < cpus_.size(); ++i) medians[std::to_string(cpus_[i])] = number(median_of(history_[i]));
  const double per_block = judged_ == 0 ? 0 : spent_ns_ / static_cast<double>(judged_);
  return {{"what", "median of " + std::to_string(kSpinsPerProbe) + " spins of " + std::to_string(kSpinIterations) +
                       " dependent increments, on each CPU in turn (the runner's thread pinned there), then on "
                       "every CPU at once (a thread pinned to each, the spins of a round started together; the "
                       "round's time from the first start to the last end), before and after every block "
                       "repetition"},
          {"cpus", cpus_},
          {"median_ns", medians},
          {"together_median_ns", number(median_of(together_history_))},
          {"slow_share", kSlowCpuShare},
          {"block_repetitions", judged_},
          {"flagged", flagged_},
          {"cost_ns_per_block_repetition", per_block}};
}

}  // namespace schedlab
