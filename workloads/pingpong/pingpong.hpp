// pingpong: pairs of tasks handing a token back and forth through unbuffered channels, beside
// optional CPU hogs (Go's BenchmarkPingPongHog, runtime/proc_test.go).
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

struct PingPongParams {
  std::uint64_t pairs = 1;
  std::uint64_t rounds = 10000;  // round trips per pair
  std::uint64_t hog = 0;         // CPU-bound tasks that never wait
  // Each hog spins until every pair is done, or for this many increments if that comes first:
  // the bound that lets a hog end where nothing preempts it (--preempt off).
  std::uint64_t hog_iters = 1'000'000'000;
};

std::unique_ptr<Workload> make_pingpong(PingPongParams params);

}  // namespace schedlab
