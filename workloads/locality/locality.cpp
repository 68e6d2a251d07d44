// locality: who runs a child task right after its parent decides whether the child's data is
// still in cache.
//
// The array (default 16 x the L2 size, so it never fits in L2) is split recursively in halves.
// A node sweeps its whole region `passes` times (read, update, write), then spawns a task for
// each half and joins both; a region of `leaf` bytes or less is a leaf that sweeps and stops.
// Each child therefore starts on data its parent wrote a moment ago:
//
//   node [0,S) sweeps S bytes ─┬─ spawn [0,S/2)   sweeps S/2 bytes: hot if it runs next, here
//                              └─ spawn [S/2,S)   sweeps S/2 bytes: hot only on the parent's core
//
// Once a region fits in L2 (depth >= 4 with the defaults), the order of execution decides:
// - LIFO on the owner (steal-half, fair): the newest child runs next on the same core, while
//   its half is still in that core's L2; a thief takes the *oldest* task, far away in the tree.
// - one central FIFO queue: children run in breadth-first order, so between a parent and its
//   child every other node of the same level sweeps its region; the whole level (the whole
//   array) passes through the cache in between and the child finds its data evicted. With
//   more than one worker the child also usually runs on another core.
// On a machine with cache counters this shows as L2 misses per task (papi_l2_dcm); anywhere it
// shows as wall time, weaker on a VM whose L3 holds the whole array.
//
// Each node records its region (footprint.hpp) for the per-core cache model: the sweeps are the
// workload's whole footprint, so the model replays exactly what the tasks touch, pass by pass.
//
// The check is exact: every element is updated passes x (levels of the tree above it,
// including its leaf) times by x -> x * 3 + 1 (mod 2^64), the same count for every element, so
// the final array is known without running a serial reference.
#include "locality.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "api.hpp"
#include "footprint.hpp"

namespace schedlab {
namespace {

constexpr std::uint64_t update(std::uint64_t x) { return x * 3 + 1; }

void sweep(std::uint64_t* data, std::size_t count, std::uint64_t passes) {
  for (std::uint64_t p = 0; p < passes; ++p) {
    for (std::size_t i = 0; i < count; ++i) data[i] = update(data[i]);
  }
}

class LocalityWorkload final : public ElidableWorkload<LocalityWorkload> {
 public:
  explicit LocalityWorkload(LocalityParams p) : params_(p) {
    elements_ = static_cast<std::size_t>(p.bytes / sizeof(std::uint64_t));
    leaf_elements_ = static_cast<std::size_t>(p.leaf / sizeof(std::uint64_t));
    // Levels of the tree: halve until a region is a leaf. Sizes are powers of two (checked),
    // so every leaf is at the same depth and every element sees the same number of sweeps.
    for (std::size_t n = elements_; n > leaf_elements_; n /= 2) ++levels_above_leaf_;
  }

  void prepare() override { data_.assign(elements_, 0); }

  template <class X>
  void body() {
    touch(data_.data(), elements_ * sizeof(std::uint64_t), 1, /*writes=*/true);
    for (std::size_t i = 0; i < elements_; ++i) data_[i] = i;
    node<X>(data_.data(), elements_);
  }

  std::string check() override {
    // x -> 3x + 1 applied k times is x -> 3^k x + (3^k - 1) / 2, i.e. a x + b with
    // b = 1 + 3 + ... + 3^(k-1), all mod 2^64.
    const std::uint64_t sweeps = params_.passes * (levels_above_leaf_ + 1);
    std::uint64_t a = 1, b = 0;
    for (std::uint64_t s = 0; s < sweeps; ++s) {
      b += a;
      a *= 3;
    }
    for (std::size_t i = 0; i < elements_; ++i) {
      const std::uint64_t want = a * i + b;
      if (data_[i] != want) {
        return "locality element " + std::to_string(i) + " is " + std::to_string(data_[i]) +
               ", expected " + std::to_string(want) + " (a region was swept a wrong number of times)";
      }
    }
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override {
    // A full binary tree with 2^levels leaves; the root node runs in the root task.
    return (std::uint64_t{2} << levels_above_leaf_) - 2;
  }

  void cleanup() override { std::vector<std::uint64_t>().swap(data_); }

 private:
  template <class X>
  void node(std::uint64_t* data, std::size_t count) {
    touch(data, count * sizeof(std::uint64_t), static_cast<unsigned>(params_.passes), /*writes=*/true);
    sweep(data, count, params_.passes);
    if (count <= leaf_elements_) return;
    const std::size_t half = count / 2;
    auto left = X::spawn([this, data, half] { node<X>(data, half); });
    auto right = X::spawn([this, data, half] { node<X>(data + half, half); });
    left.join();
    right.join();
  }

  const LocalityParams params_;
  std::size_t elements_ = 0;
  std::size_t leaf_elements_ = 0;
  std::uint64_t levels_above_leaf_ = 0;
  std::vector<std::uint64_t> data_;
};

bool power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

std::unique_ptr<Workload> make_locality(LocalityParams p) {
  if (!power_of_two(p.bytes) || !power_of_two(p.leaf) || p.leaf < 64 || p.leaf > p.bytes) {
    throw std::invalid_argument("locality --bytes " + std::to_string(p.bytes) + " and --leaf " +
                                std::to_string(p.leaf) +
                                ": both must be powers of two with 64 <= leaf <= bytes; e.g. --bytes 32M --leaf 256K");
  }
  return std::make_unique<LocalityWorkload>(p);
}

}  // namespace schedlab
