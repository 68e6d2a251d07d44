// skynet: Alexander Temerev's concurrency microbenchmark, the field's measure of raw spawn and
// join cost (atemerev/skynet; ported by Boost.Fiber, doc/performance.qbk, and by
// tzcnt/runtime-benchmarks).
//
// The root task spawns 10 tasks, each of them 10 more, and so on until the last level holds
// --leaves tasks (a power of 10). Leaf i returns its ordinal number i (0 .. leaves-1); every
// inner task sums its 10 children's values and returns the sum to its parent. The root's sum
// must be leaves (leaves - 1) / 2: 499,999,500,000 for the original 10^6 leaves,
// 4,999,999,950,000,000 for tzcnt's 10^8.
//
// The tasks do nothing but spawn, join and add, so the time is the scheduler's per-task cost:
// 1,111,111 tasks for 10^6 leaves (every node but the root, skynet_tasks()).
//
// Shape, and where it departs from the other ports: every inner task spawns all 10 children as
// tasks and then waits for them, as the original Go program starts 10 goroutines and receives
// 10 values from one channel, and as Boost.Fiber's skynet_join launches and joins 10 fibers.
// tzcnt's ports run the 10th child inline (oneTBB: 9 x task_group::run, then run_and_wait of
// the 10th), so their trees have 10% fewer tasks; the report's literature table compares
// ratios to oneTBB, which that difference shifts by a few per cent at most (docs/workloads.md). Children
// return their sums through one slot each, filled before the wait group counts them done (the
// wait group stands for the Go program's channel: wait() is its 10 receives).
#include "skynet.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "api.hpp"

namespace schedlab {
namespace {

constexpr int kFanOut = 10;  // the benchmark's definition: a 10-way tree

// The sum of the leaves below a node whose first leaf is `first` and which has `size` leaves.
template <class X>
std::uint64_t skynet(std::uint64_t first, std::uint64_t size) {
  if (size == 1) return first;
  const std::uint64_t child = size / kFanOut;
  std::array<std::uint64_t, kFanOut> sums;
  typename X::WaitGroup wg;
  for (int i = 0; i < kFanOut; ++i) {
    wg.go([&sums, i, first, child] { sums[i] = skynet<X>(first + static_cast<std::uint64_t>(i) * child, child); });
  }
  wg.wait();
  std::uint64_t total = 0;
  for (const std::uint64_t s : sums) total += s;
  return total;
}

class SkynetWorkload final : public ElidableWorkload<SkynetWorkload> {
 public:
  explicit SkynetWorkload(SkynetParams p) : params_(p) {}

  template <class X>
  void body() {
    result_ = skynet<X>(0, params_.leaves);
  }

  std::string check() override {
    const std::uint64_t want = skynet_sum(params_.leaves);
    if (result_ == want) return {};
    return "skynet with " + std::to_string(params_.leaves) + " leaves summed to " + std::to_string(result_) +
           ", expected " + std::to_string(want);
  }

  std::optional<std::uint64_t> expected_tasks() const override { return skynet_tasks(params_.leaves); }

 private:
  const SkynetParams params_;
  std::uint64_t result_ = 0;
};

bool power_of_ten(std::uint64_t v) {
  if (v == 0) return false;
  while (v % kFanOut == 0) v /= kFanOut;
  return v == 1;
}

}  // namespace

std::uint64_t skynet_sum(std::uint64_t leaves) {
  // One of leaves and leaves - 1 is even: halve that one first, so that nothing overflows.
  return leaves % 2 == 0 ? leaves / 2 * (leaves - 1) : (leaves - 1) / 2 * leaves;
}

std::uint64_t skynet_tasks(std::uint64_t leaves) { return (leaves * kFanOut - 1) / (kFanOut - 1) - 1; }

std::unique_ptr<Workload> make_skynet(SkynetParams p) {
  if (!power_of_ten(p.leaves) || p.leaves > kSkynetMaxLeaves) {
    throw std::invalid_argument("skynet --leaves " + std::to_string(p.leaves) +
                                " is not a power of 10 up to 10^9: the tree is 10-way, use e.g. --leaves 1e6");
  }
  return std::make_unique<SkynetWorkload>(p);
}

}  // namespace schedlab
