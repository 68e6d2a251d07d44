// loops: one parent spawns N tasks, each an increment loop, and waits on a wait group.
//
// This is the seeds' second program (2000 goroutines, each counting to M, a sync.WaitGroup).
// With `uniform` lengths every design that keeps its processors busy finishes in about
// N*M/threads increments. The skewed lengths (lengths.hpp) are where designs differ: `fair`
// binds task i to processor i mod P at spawn time, so with `one-long` one processor gets the
// long task *and* its share of the short ones while the other runs out of work and idles;
// a stealing design moves the short tasks to the idle processor.
//
// The result is checked: every task adds the count it really computed to one total, which must
// equal the sum of the lengths (N*M when uniform).
#include "loops.hpp"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "api.hpp"
#include "lengths.hpp"
#include "spin.hpp"

namespace schedlab {
namespace {

class LoopsWorkload final : public ElidableWorkload<LoopsWorkload> {
 public:
  explicit LoopsWorkload(const LoopsParams& p)
      : params_(p), lengths_(loop_lengths(p.tasks, p.iters, p.skew, p.seed, p.long_at)),
        expected_(std::accumulate(lengths_.begin(), lengths_.end(), std::uint64_t{0})),
        longest_(lengths_.empty() ? 0 : *std::max_element(lengths_.begin(), lengths_.end())) {}

  template <class X>
  void body() {
    total_.store(0, std::memory_order_relaxed);
    typename X::WaitGroup wg;
    for (const std::uint64_t length : lengths_) {
      wg.go([this, length] { total_.fetch_add(count_up(length), std::memory_order_relaxed); });
    }
    wg.wait();
  }

  std::string check() override {
    const std::uint64_t got = total_.load();
    if (got == expected_) return {};
    return "loops summed " + std::to_string(got) + " increments, expected " + std::to_string(expected_);
  }

  std::optional<std::uint64_t> expected_tasks() const override { return params_.tasks; }
  std::optional<double> work_span_ratio() const override {
    if (longest_ == 0) return std::nullopt;
    return static_cast<double>(expected_) / static_cast<double>(longest_);
  }

  std::optional<double> round_robin_ratio(unsigned processors) const override {
    if (lengths_.empty() || processors == 0) return std::nullopt;
    std::vector<std::uint64_t> per_processor(processors, 0);
    for (std::size_t i = 0; i < lengths_.size(); ++i) per_processor[i % processors] += lengths_[i];
    const double split = static_cast<double>(*std::max_element(per_processor.begin(), per_processor.end()));
    const double best = std::max(static_cast<double>(expected_) / processors, static_cast<double>(longest_));
    if (best == 0) return std::nullopt;
    return split / best;
  }

 private:
  const LoopsParams params_;
  const std::vector<std::uint64_t> lengths_;
  const std::uint64_t expected_;
  const std::uint64_t longest_;
  std::atomic<std::uint64_t> total_{0};
};

}  // namespace

std::unique_ptr<Workload> make_loops(LoopsParams params) {
  return std::make_unique<LoopsWorkload>(params);
}

}  // namespace schedlab
