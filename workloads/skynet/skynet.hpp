// skynet: the skynet microbenchmark (atemerev/skynet), a 10-way tree of tasks (see skynet.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

struct SkynetParams {
  // Leaves of the tree, a power of 10: 10^6 as the original and Boost.Fiber's port run it,
  // 10^8 as tzcnt/runtime-benchmarks does.
  std::uint64_t leaves = 1000000;
};

// The most leaves accepted: 10^9 (1.11 x 10^9 tasks; the sum, 4.99999999 x 10^17, fits 64 bits).
inline constexpr std::uint64_t kSkynetMaxLeaves = 1000000000;

// What the tree must sum to: the leaves' indices 0 .. leaves-1, leaves (leaves - 1) / 2.
std::uint64_t skynet_sum(std::uint64_t leaves);
// Tasks one run spawns, the root excluded: every node of the tree but the root,
// (10 leaves - 1) / 9 - 1.
std::uint64_t skynet_tasks(std::uint64_t leaves);

// Throws std::invalid_argument for leaves that are not a power of 10 in 1..kSkynetMaxLeaves.
std::unique_ptr<Workload> make_skynet(SkynetParams params);

}  // namespace schedlab
