// global_batch.hpp: how many tasks a P takes from the global queue at once (Go's globrunqget).
//
// One rule, used by the policy (steal_half.cpp, global_get_locked) and by the queue stress test
// that drives LocalRunQueue the way the policy does, so the two cannot drift apart.
#pragma once

#include <cstdint>

#include "../assert.hpp"

namespace schedlab {

// The batch a P takes from a global queue of `global_size` (at least 1) tasks: its share,
// global_size / nprocs + 1, so that work spreads over the Ps instead of the first one to look
// draining it all; at most `max` (0: no limit; the 1-in-61 check takes exactly one); and at most
// half of `local_capacity`, because all but the first of the batch go into the P's local queue,
// which must keep room for what those tasks spawn. Go's globrunqget, line for line.
inline std::uint32_t global_batch_size(std::uint32_t global_size, std::uint32_t nprocs,
                                       std::uint32_t max, std::uint32_t local_capacity) noexcept {
  std::uint32_t n = global_size / nprocs + 1;
  if (n > global_size) n = global_size;
  if (max > 0 && n > max) n = max;
  if (n > local_capacity / 2) n = local_capacity / 2;
  // local_capacity >= LocalRunQueue::kMinCapacity keeps the last cap from reaching 0.
  SCHEDLAB_ASSERT(n >= 1 && n <= global_size, "a global batch takes at least one task and no more than are queued");
  return n;
}

}  // namespace schedlab
