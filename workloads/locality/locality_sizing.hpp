// locality_sizing.hpp: the locality workload's sizes when --bytes and --leaf are left at auto,
// from this machine's caches (sysfs, else CPUID: schedulers/machine_caches.hpp's cache_info), and where each size
// came from (the sidecar records both).
//
//   sweep: an array of 16 x L2 and leaves of L2 / 8 (the per-core L2 rounded down to a power
//          of two): the array never fits in L2, a leaf always does, and by hand one FIFO queue
//          misses 1.6 times as often as LIFO (docs/workloads.md's count).
//   chase: an array of at least twice the last level (the smallest power of two that is), so
//          that under FIFO a whole level of the tree, one array, passes through every cache
//          between a parent and its child and evicts the child's half; leaves of half an L2, so
//          that a leaf fits in the core's own cache with room to spare, and the tree has few
//          levels (each level is one walk over the array at memory latency under FIFO).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace schedlab {

struct CacheSize {
  std::uint64_t bytes = 0;
  std::string from;  // "sysfs (cpu0 index2), level 2" or the assumption made when the machine does not say
};

struct LocalitySizing {
  CacheSize l2;          // the per-core L2
  CacheSize last_level;  // the highest level the machine describes (L3 here; L2 where it is the last)
  std::uint64_t sweep_bytes = 0, sweep_leaf = 0;
  std::uint64_t chase_bytes = 0, chase_leaf = 0;
  nlohmann::json json() const;
};

// This machine's, read from sysfs once.
const LocalitySizing& locality_sizing();

}  // namespace schedlab
