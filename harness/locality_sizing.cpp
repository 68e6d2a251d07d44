// locality_sizing.cpp: see locality_sizing.hpp.
#include "locality_sizing.hpp"

#include <bit>

#include "metadata.hpp"

namespace schedlab {
namespace {

// What a machine whose sysfs describes no cache is assumed to have: the caches of the VMs this
// suite was built on (docs/platform.md), said so in the sidecar.
constexpr std::uint64_t kAssumedL2 = std::uint64_t{1} << 20;
constexpr std::uint64_t kAssumedLastLevel = std::uint64_t{32} << 20;

CacheSize cache_at(int level) {
  const std::size_t bytes = cache_size_bytes(level);
  if (bytes == 0) return {};
  return {bytes, "sysfs (/sys/devices/system/cpu/cpu0/cache, level " + std::to_string(level) + ")"};
}

LocalitySizing measure() {
  LocalitySizing s;
  s.l2 = cache_at(2);
  if (s.l2.bytes == 0) s.l2 = {kAssumedL2, "assumed: sysfs describes no L2"};
  for (int level = 4; level >= 2 && s.last_level.bytes == 0; --level) s.last_level = cache_at(level);
  if (s.last_level.bytes == 0) s.last_level = {kAssumedLastLevel, "assumed: sysfs describes no cache"};
  const std::uint64_t l2 = std::bit_floor(s.l2.bytes);
  s.sweep_bytes = 16 * l2;
  s.sweep_leaf = l2 / 8;
  s.chase_bytes = std::bit_ceil(2 * s.last_level.bytes);
  s.chase_leaf = l2 / 2;
  return s;
}

}  // namespace

nlohmann::json LocalitySizing::json() const {
  return {{"l2", {{"bytes", l2.bytes}, {"from", l2.from}}},
          {"last_level", {{"bytes", last_level.bytes}, {"from", last_level.from}}},
          {"sweep", {{"bytes", sweep_bytes}, {"leaf", sweep_leaf}, {"rule", "bytes 16 x L2, leaf L2 / 8 (L2 rounded down to a power of two)"}}},
          {"chase", {{"bytes", chase_bytes}, {"leaf", chase_leaf},
                     {"rule", "bytes the smallest power of two at least twice the last level, leaf L2 / 2"}}}};
}

const LocalitySizing& locality_sizing() {
  static const LocalitySizing s = measure();
  return s;
}

}  // namespace schedlab
