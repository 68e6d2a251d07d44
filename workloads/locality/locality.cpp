// locality: who runs a child task right after its parent decides whether the child's data is
// still in cache.
//
// The array is split recursively in halves. A node goes over its whole region `passes` times
// (read, update, write), then spawns a task for each half and joins both; a region of `leaf`
// bytes or less is a leaf that goes over it and stops. Each child therefore starts on data its
// parent wrote a moment ago:
//
//   node [0,S) goes over S bytes ─┬─ spawn [0,S/2)   S/2 bytes: hot if it runs next, here
//                                 └─ spawn [S/2,S)   S/2 bytes: hot only on the parent's core
//
// Once a region fits in L2, the order of execution decides:
// - LIFO on the owner (steal-half, fair): the newest child runs next on the same core, while
//   its half is still in that core's L2; a thief takes the *oldest* task, far away in the tree.
// - one central FIFO queue: children run in breadth-first order, so between a parent and its
//   child every other node of the same level goes over its region; the whole level (the whole
//   array) passes through the cache in between and the child finds its data evicted. With
//   more than one worker the child also usually runs on another core.
//
// How a node goes over its region (`--access`):
// - sweep: front to back. On a machine with cache counters the orders differ in L2 misses per
//   task (papi_l2_dcm), but hardly in time: the hardware prefetcher streams a sequential sweep
//   from memory almost as fast as from cache (measured: 128 MiB, 4 x this VM's L3, pinned,
//   steal-half LIFO 231 ms, FIFO 233, central 241 at 1 thread), so the misses LIFO saves cost
//   little.
// - chase: each pass walks the region's 64-byte lines in a seeded pseudo-random order
//   (footprint.hpp's walk_line, seeded by the node's place in the tree), and the address of
//   each line depends on the value read from the line before (chase()): no prefetcher can follow
//   it and no two misses overlap, so every miss costs a full latency of the level that serves
//   it. Sized from the caches (the registry: an array of at least twice the last level, so that
//   a level of the tree cannot stay cached between a parent and its child under FIFO; leaves of
//   half an L2), the orders then differ in time by what the caches that serve each level cost.
//
// Each node records its region (footprint.hpp) for the per-core cache model, as a range or, for
// a chase, as a walk with its seed: the accesses are the workload's whole footprint, so the model
// replays exactly what the tasks touch, pass by pass, in the order they touch it.
//
// The check is exact: every element is updated passes x (levels of the tree above it,
// including its leaf) times by x -> x * 3 + 1 (mod 2^64), the same count for every element, so
// the final array is known without running a serial reference.
#include "locality.hpp"

#include <sys/mman.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "api.hpp"
#include "footprint.hpp"

namespace schedlab {
namespace {

constexpr std::uint64_t update(std::uint64_t x) { return x * 3 + 1; }

// x -> a x + b: `update` applied some number of times.
struct Affine {
  std::uint64_t a = 1, b = 0;
  Affine then_update() const { return {a * 3, b * 3 + 1}; }
};

constexpr std::size_t kLineWords = kWalkLineBytes / sizeof(std::uint64_t);
// The array's alignment: a huge page (2 MiB on x86-64 and on ARM with 4 KiB base pages).
constexpr std::size_t kHugePage = std::size_t{2} << 20;

void sweep(std::uint64_t* data, std::size_t count, std::uint64_t passes) {
  for (std::uint64_t p = 0; p < passes; ++p) {
    for (std::size_t i = 0; i < count; ++i) data[i] = update(data[i]);
  }
}

// One pass of the walk over the `count` elements from `data` (whole lines; element `first` of
// the array): every line once, in walk_line(seed, ...)'s order, every element of it updated. The
// next line's address depends on the value just read: `carry` is the line's first word minus
// what `before` (the updates it has had) says it holds, 0 in a correct run but unknown to the
// compiler and the processor, so each load waits for the one before it. A wrong value sends the
// walk astray, which check() then sees.
void chase(std::uint64_t* data, std::size_t count, std::uint64_t first, std::uint64_t seed, Affine before) {
  const std::uint64_t lines = count / kLineWords;
  std::uint64_t carry = 0;
  for (std::uint64_t k = 0; k < lines; ++k) {
    const std::uint64_t line = (walk_line(seed, lines, k) + carry) & (lines - 1);
    std::uint64_t* words = data + line * kLineWords;
    carry = words[0] - (before.a * (first + line * kLineWords) + before.b);
    for (std::size_t i = 0; i < kLineWords; ++i) words[i] = update(words[i]);
  }
}

// The seed of a node's walk, from its place in the tree (its first element and its size): a
// fixed function, so every run walks the same orders.
std::uint64_t walk_seed(std::uint64_t first, std::uint64_t count) {
  std::uint64_t z = first + count * 0x9E3779B97F4A7C15ull;  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
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

  // The array starts on a huge page's boundary (so on a line), and a chase asks the kernel to back
  // it with huge pages (MADV_HUGEPAGE, where transparent huge pages are enabled or on request):
  // with 4 KiB pages a random walk over tens of MiB also misses the TLB on nearly every line,
  // whose page walks (doubled under a VM's nested paging) would add the same cost under every
  // order and hide the caches' part. Zeroed after the advice, so the first touch faults huge
  // pages in. A sweep gets no advice: its TLB misses are one per page, and prefetched.
  void prepare() override {
    const std::size_t bytes = (elements_ * sizeof(std::uint64_t) + kHugePage - 1) / kHugePage * kHugePage;
    void* memory = std::aligned_alloc(kHugePage, bytes);
    if (memory == nullptr) {
      throw std::runtime_error("locality: cannot allocate its " + std::to_string(bytes >> 20) +
                               " MiB array; use a smaller --bytes");
    }
    data_.reset(static_cast<std::uint64_t*>(memory));
    if (params_.access == LocalityAccess::chase) (void)::madvise(memory, bytes, MADV_HUGEPAGE);  // advice only
    std::memset(memory, 0, bytes);
  }

  template <class X>
  void body() {
    std::uint64_t* data = array();
    touch(data, elements_ * sizeof(std::uint64_t), 1, /*writes=*/true);
    for (std::size_t i = 0; i < elements_; ++i) data[i] = i;
    node<X>(data, elements_);
  }

  std::string check() override {
    // x -> 3x + 1 applied k times is x -> 3^k x + (3^k - 1) / 2, i.e. a x + b with
    // b = 1 + 3 + ... + 3^(k-1), all mod 2^64.
    const Affine all = updates(params_.passes * (levels_above_leaf_ + 1));
    const std::uint64_t* data = array();
    for (std::size_t i = 0; i < elements_; ++i) {
      const std::uint64_t want = all.a * i + all.b;
      if (data[i] != want) {
        return "locality element " + std::to_string(i) + " is " + std::to_string(data[i]) +
               ", expected " + std::to_string(want) + " (a region was gone over a wrong number of times)";
      }
    }
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override {
    // A full binary tree with 2^levels leaves; the root node runs in the root task.
    return (std::uint64_t{2} << levels_above_leaf_) - 2;
  }

  void cleanup() override { data_.reset(); }

 private:
  template <class X>
  void node(std::uint64_t* data, std::size_t count) {
    access(data, count);
    if (count <= leaf_elements_) return;
    const std::size_t half = count / 2;
    auto left = X::spawn([this, data, half] { node<X>(data, half); });
    auto right = X::spawn([this, data, half] { node<X>(data + half, half); });
    left.join();
    right.join();
  }

  // What a node does to its region, `passes` times: a sweep or a chase, its footprint recorded
  // first.
  void access(std::uint64_t* data, std::size_t count) {
    const auto passes = static_cast<unsigned>(params_.passes);
    const std::size_t bytes = count * sizeof(std::uint64_t);
    if (params_.access == LocalityAccess::sweep) {
      touch(data, bytes, passes, /*writes=*/true);
      sweep(data, count, params_.passes);
      return;
    }
    const auto first = static_cast<std::uint64_t>(data - array());
    const std::uint64_t seed = walk_seed(first, count);
    touch_walk(data, bytes, seed, passes, /*writes=*/true);
    // The node's depth: its ancestors each went over this region `passes` times before it.
    const auto depth = static_cast<std::uint64_t>(std::countr_zero(elements_) - std::countr_zero(count));
    for (std::uint64_t p = 0; p < params_.passes; ++p) chase(data, count, first, seed, updates(depth * params_.passes + p));
  }

  // `update` applied n times.
  static Affine updates(std::uint64_t n) {
    Affine f;
    for (std::uint64_t i = 0; i < n; ++i) f = f.then_update();
    return f;
  }

  std::uint64_t* array() { return data_.get(); }

  const LocalityParams params_;
  std::size_t elements_ = 0;
  std::size_t leaf_elements_ = 0;
  std::uint64_t levels_above_leaf_ = 0;
  struct Free {
    void operator()(std::uint64_t* p) const { std::free(p); }
  };
  std::unique_ptr<std::uint64_t[], Free> data_;
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
