// machine_caches.hpp: this machine's caches as the kernel or the processor describes them.
//
// Below the harness because a workload sizes itself from them (workloads/locality: --bytes and
// --leaf auto) and the harness records them (the sidecar's machine.caches, the simulated caches'
// geometry): one reading, one set of plausibility rules, for all three.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace schedlab {

// The first line of a file (sysfs, /proc), empty when it cannot be read.
std::string read_first_line(const std::string& path);

// One cache of CPU 0, and where its description came from.
//
// sysfs (/sys/devices/system/cpu/cpu0/cache/indexN) where the kernel describes it, else the
// processor's own description (CPUID, which glibc's sysconf(_SC_LEVEL1_DCACHE_SIZE) and friends
// read). Some VMs have no sysfs cache description at all (a Firecracker guest on AMD EPYC), and
// there CPUID is the only source; it can be wrong: the same guest's CPUID gave an L3 of 508 MiB
// with associativity 0. Each description is checked (implausible_cache) and an implausible one is
// treated as unknown, so that a caller falls back to a stated assumption or asks for the option
// that sets the size, instead of sizing an array or a simulated cache by a wrong figure.
struct CacheInfo {
  std::size_t size = 0;  // bytes
  unsigned ways = 0;     // associativity
  unsigned line = 0;     // line size in bytes
  std::string from;      // "sysfs (cpu0 index2)", "CPUID (sysconf)"
};

// Why `c`, read as the level-`level` cache, cannot be a real cache: no size, associativity 0 or
// unknown, a line size that is no power of two in [16, 1024], a size that is no whole number of
// sets (ways x line), or beyond any cache built at that level (an L1 above 1 MiB, an L2 above
// 64 MiB, an L3 above 4 GiB). Empty when plausible.
std::string implausible_cache(const CacheInfo& c, int level);

// The first plausible of `candidates` (sysfs's, then CPUID's, in that order), or nullopt; `why`
// collects, when given, why each candidate was passed over ("sysfs: no description; CPUID:
// associativity 0").
std::optional<CacheInfo> choose_cache(const std::vector<std::optional<CacheInfo>>& candidates, int level,
                                      std::string* why = nullptr);

// The cache at `level` (1, 2, 3) of CPU 0: the data or unified one, or with `instruction` the
// instruction one, from sysfs, else CPUID (choose_cache). nullopt when neither describes a
// plausible one; `why` says why.
//
// Tests hide sysfs's description with SCHEDLAB_SYSFS_ROOT=DIR (read as the root of sysfs, "/sys"
// when unset), as on a machine whose kernel does not describe its caches.
std::optional<CacheInfo> cache_info(int level, bool instruction = false, std::string* why = nullptr);

}  // namespace schedlab
