// recurse: tasks that recurse deeply on their own stacks, to meet the stack limits on purpose.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

// Each call of a task's recursion holds at least this much stack.
inline constexpr std::size_t kRecurseFrameBytes = 256;

struct RecurseParams {
  std::uint64_t tasks = 2;
  std::uint64_t depth = 100;  // 100 x 256 bytes: well inside the default 64 KiB fiber stack
};

std::unique_ptr<Workload> make_recurse(RecurseParams params);

}  // namespace schedlab
