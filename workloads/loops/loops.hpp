// loops: the seeds' CPU-bound program (one parent, N loop tasks, a wait group).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "../workload.hpp"

namespace schedlab {

struct LoopsParams {
  std::uint64_t tasks = 2000;
  std::uint64_t iters = 1000000;  // per task, before skew
  std::string skew = "uniform";   // uniform | one-long | heavy-tail (see lengths.hpp)
  std::uint64_t seed = 1;         // heavy-tail, and one-long with long_at "random"
  std::string long_at = "first";  // one-long: where the long task is spawned (lengths.hpp)
};

std::unique_ptr<Workload> make_loops(LoopsParams params);

}  // namespace schedlab
