// cache_model.cpp: the per-core LRU replay (see cache_model.hpp).
#include "counters/cache_model.hpp"

#include <algorithm>

namespace schedlab {

CoreCaches::CoreCaches(const CacheGeometry& geometry, unsigned workers)
    : g_(geometry),
      workers_(workers),
      tags_(static_cast<std::size_t>(workers) * geometry.sets() * geometry.assoc, 0),
      fill_(static_cast<std::size_t>(workers) * geometry.sets(), 0) {}

std::uint64_t* CoreCaches::ways(unsigned worker, std::uint64_t line) {
  const std::uint64_t set = line & (g_.sets() - 1);  // sets() is a power of two (geometry_problem)
  return tags_.data() + (static_cast<std::uint64_t>(worker) * g_.sets() + set) * g_.assoc;
}

std::uint64_t& CoreCaches::filled(unsigned worker, std::uint64_t line) {
  return fill_[static_cast<std::uint64_t>(worker) * g_.sets() + (line & (g_.sets() - 1))];
}

bool CoreCaches::touch(unsigned worker, std::uint64_t address, bool writes) {
  const std::uint64_t line = address / g_.line;
  std::uint64_t* set = ways(worker, line);
  std::uint64_t& used = filled(worker, line);
  std::uint64_t* end = set + used;
  std::uint64_t* hit = std::find(set, end, line);
  const bool miss = hit == end;
  if (miss) {
    if (used < g_.assoc) ++used;  // else the least recently used way (the last) is evicted
    hit = set + used - 1;
  }
  std::copy_backward(set, hit, hit + 1);  // shift the more recent ways down by one
  set[0] = line;
  if (writes) {
    for (unsigned other = 0; other < workers_; ++other) {
      if (other == worker) continue;
      std::uint64_t* theirs = ways(other, line);
      std::uint64_t& their_used = filled(other, line);
      std::uint64_t* copy = std::find(theirs, theirs + their_used, line);
      if (copy == theirs + their_used) continue;
      std::copy(copy + 1, theirs + their_used, copy);
      --their_used;
    }
  }
  return miss;
}

std::uint64_t replay_misses(const std::vector<Footprint>& record, unsigned workers,
                            const CacheGeometry& geometry) {
  CoreCaches caches(geometry, std::max(workers, 1u));
  std::uint64_t misses = 0;
  for (const Footprint& f : record) {
    for (std::uint32_t pass = 0; pass < f.passes; ++pass) {
      std::uint64_t pass_misses = 0;
      if (f.walked) {
        const std::uint64_t lines = f.row_bytes / kWalkLineBytes;
        for (std::uint64_t k = 0; k < lines; ++k) {
          // One cache line where the cache's lines are 64 bytes; every cache line it spans where
          // they are shorter; one it shares with its neighbour where they are longer.
          const std::uint64_t first = f.base + walk_line(f.walk_seed, lines, k) * kWalkLineBytes;
          for (std::uint64_t a = first - first % geometry.line; a < first + kWalkLineBytes; a += geometry.line) {
            pass_misses += caches.touch(f.worker, a, f.writes) ? 1 : 0;
          }
        }
      }
      for (std::uint64_t r = 0; r < (f.walked ? 0 : f.rows); ++r) {
        const std::uint64_t first = f.base + r * f.stride;
        const std::uint64_t last = first + f.row_bytes;  // one past
        for (std::uint64_t a = first - first % geometry.line; a < last; a += geometry.line) {
          pass_misses += caches.touch(f.worker, a, f.writes) ? 1 : 0;
        }
      }
      misses += pass_misses;
      if (pass_misses == 0) break;
    }
  }
  return misses;
}

}  // namespace schedlab
