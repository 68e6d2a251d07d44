// locality_sizing.cpp: see locality_sizing.hpp.
#include "locality/locality_sizing.hpp"

#include <bit>

#include "machine_caches.hpp"

namespace schedlab {
namespace {

// What a machine that describes no plausible cache (sysfs, else CPUID: machine_caches.hpp's cache_info)
// is assumed to have: the caches of the VMs this suite was built on (docs/platform.md), said so
// in the sidecar. --bytes and --leaf set the sizes by hand.
constexpr std::uint64_t kAssumedL2 = std::uint64_t{1} << 20;
constexpr std::uint64_t kAssumedLastLevel = std::uint64_t{32} << 20;

CacheSize cache_at(int level, std::string* why) {
  const std::optional<CacheInfo> c = cache_info(level, false, why);
  if (!c) return {};
  return {c->size, c->from + ", level " + std::to_string(level)};
}

LocalitySizing measure() {
  LocalitySizing s;
  std::string why_l2, why_last;
  s.l2 = cache_at(2, &why_l2);
  if (s.l2.bytes == 0) s.l2 = {kAssumedL2, "assumed: the machine describes no usable L2 (" + why_l2 + "); give --leaf"};
  for (int level = 4; level >= 2 && s.last_level.bytes == 0; --level) s.last_level = cache_at(level, &why_last);
  if (s.last_level.bytes == 0) {
    s.last_level = {kAssumedLastLevel, "assumed: the machine describes no usable last-level cache (" + why_last +
                                           "); give --bytes"};
  }
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
