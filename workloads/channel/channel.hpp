// channel: tzcnt/runtime-benchmarks' channel benchmark, values through one buffered MPMC channel.
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

struct ChannelParams {
  std::uint64_t values = 1'000'000;  // tzcnt's: 10^7
  std::uint64_t producers = 1;       // tzcnt's: threads / 2, at least 1 (1 at 1 and 2 threads)
  std::uint64_t consumers = 1;
  // Buffered values. tzcnt's ports use each library's own channel (TooManyCooks': unbounded);
  // 1023 is the most a Boost.Fiber buffered_channel of 1024 slots holds, so that boost-fiber
  // gets exactly this capacity too.
  std::uint64_t capacity = 1023;
};

std::unique_ptr<Workload> make_channel_workload(ChannelParams params);

}  // namespace schedlab
