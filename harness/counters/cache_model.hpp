// cache_model.hpp: `model_l2_misses`, a model of the misses in each core's own L2, from the
// footprints a run recorded (workloads/footprint.hpp). A model, not a measurement: everywhere
// it appears it is called modelled.
//
// What Valgrind cannot show: it runs one thread at a time on one cache hierarchy shared by all
// threads, so a task that runs on another core than the one that wrote its data finds the data
// in "the" cache. The model gives every worker its own cache and replays the footprints in the
// order they began, each on the cache of the worker that ran it:
//   - one set-associative LRU cache per worker, of the LL geometry (the per-core L2 by default,
//     --sim-ll), starting empty at the start of the run;
//   - a footprint touches each line of its rows once per pass, in address order (a walk's, in
//     its walk order: footprint.hpp's walk_line); a touch is a miss when the line is not in that
//     worker's cache;
//   - a write invalidates the line in every other worker's cache (as a coherence protocol does),
//     so a child running on another core than its parent pays for the half its parent wrote.
// It sees only the declared footprints (not stacks, queues or task objects), no hardware
// prefetching, no inclusion or victim policy, and footprints of two workers that overlap in
// time are replayed one after the other. It is exact for what it models: the same record
// always gives the same count.
#pragma once

#include <cstdint>
#include <vector>

#include "counters/cache_geometry.hpp"
#include "footprint.hpp"

namespace schedlab {

// One LRU cache per worker (`workers` of them, ids 0..workers-1), write-invalidate between them.
class CoreCaches {
 public:
  CoreCaches(const CacheGeometry& geometry, unsigned workers);

  // Touches the line holding byte `address` on `worker`'s cache; returns true for a miss.
  bool touch(unsigned worker, std::uint64_t address, bool writes);

 private:
  // The set of `line` in `worker`'s cache: its ways, most recently used first, and how many
  // hold a line.
  std::uint64_t* ways(unsigned worker, std::uint64_t line);
  std::uint64_t& filled(unsigned worker, std::uint64_t line);

  CacheGeometry g_;
  unsigned workers_;
  std::vector<std::uint64_t> tags_;   // [worker][set][way]: line numbers
  std::vector<std::uint64_t> fill_;   // [worker][set]: ways in use
};

// Misses of the whole record, replayed in order through one cache per worker. A pass that
// misses nothing ends the footprint's replay: every later pass would hit the same lines in the
// same order, so it cannot miss either (exact, and it keeps the replay of a many-pass sweep of
// a small region short).
std::uint64_t replay_misses(const std::vector<Footprint>& record, unsigned workers,
                            const CacheGeometry& geometry);

}  // namespace schedlab
