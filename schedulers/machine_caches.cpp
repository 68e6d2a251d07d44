// machine_caches.cpp: see machine_caches.hpp.
#include "machine_caches.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace schedlab {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

namespace {

// sysfs's root: /sys, or SCHEDLAB_SYSFS_ROOT for tests that hide the cache description.
std::string sysfs_root() {
  const char* root = std::getenv("SCHEDLAB_SYSFS_ROOT");
  return root != nullptr && *root != '\0' ? root : "/sys";
}

std::optional<CacheInfo> sysfs_cache(int level, bool instruction) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = sysfs_root() + "/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string lvl = read_first_line(dir + "level");
    if (lvl.empty()) break;
    if (std::atoi(lvl.c_str()) != level) continue;
    const std::string type = read_first_line(dir + "type");
    if (instruction ? type != "Instruction" : (type != "Data" && type != "Unified")) continue;
    std::string size = read_first_line(dir + "size");  // "2048K"
    if (size.empty()) return std::nullopt;
    std::size_t scale = 1;
    if (size.back() == 'K') scale = 1024;
    if (size.back() == 'M') scale = 1024 * 1024;
    if (scale != 1) size.pop_back();
    CacheInfo info;
    info.size = static_cast<std::size_t>(std::strtoull(size.c_str(), nullptr, 10)) * scale;
    info.ways = static_cast<unsigned>(std::strtoul(read_first_line(dir + "ways_of_associativity").c_str(), nullptr, 10));
    info.line = static_cast<unsigned>(std::strtoul(read_first_line(dir + "coherency_line_size").c_str(), nullptr, 10));
    info.from = "sysfs (cpu0 index" + std::to_string(index) + ")";
    return info;
  }
  return std::nullopt;
}

// The processor's own description, as glibc reads it from CPUID; nullopt when glibc knows
// nothing of that level (sysconf gives 0 or -1).
std::optional<CacheInfo> cpuid_cache(int level, bool instruction) {
  int size_name = 0, assoc_name = 0, line_name = 0;
  if (level == 1 && instruction) {
    size_name = _SC_LEVEL1_ICACHE_SIZE, assoc_name = _SC_LEVEL1_ICACHE_ASSOC, line_name = _SC_LEVEL1_ICACHE_LINESIZE;
  } else if (level == 1) {
    size_name = _SC_LEVEL1_DCACHE_SIZE, assoc_name = _SC_LEVEL1_DCACHE_ASSOC, line_name = _SC_LEVEL1_DCACHE_LINESIZE;
  } else if (level == 2 && !instruction) {
    size_name = _SC_LEVEL2_CACHE_SIZE, assoc_name = _SC_LEVEL2_CACHE_ASSOC, line_name = _SC_LEVEL2_CACHE_LINESIZE;
  } else if (level == 3 && !instruction) {
    size_name = _SC_LEVEL3_CACHE_SIZE, assoc_name = _SC_LEVEL3_CACHE_ASSOC, line_name = _SC_LEVEL3_CACHE_LINESIZE;
  } else {
    return std::nullopt;
  }
  const long size = ::sysconf(size_name);
  if (size <= 0) return std::nullopt;
  const long ways = ::sysconf(assoc_name), line = ::sysconf(line_name);
  return CacheInfo{static_cast<std::size_t>(size), static_cast<unsigned>(std::max(0L, ways)),
                   static_cast<unsigned>(std::max(0L, line)), "CPUID (sysconf)"};
}

}  // namespace

std::string implausible_cache(const CacheInfo& c, int level) {
  // The largest caches built: L1 data caches of 48-192 KiB, L2s of up to 32 MiB per core, L3s of
  // a few hundred MiB per socket (the project's own VM reports a real 260 MiB). Each bound is
  // several times that, so that only a figure no machine has is refused.
  const std::size_t most = level == 1 ? std::size_t{1} << 20 : level == 2 ? std::size_t{64} << 20 : std::size_t{4} << 30;
  if (c.size == 0) return "no size";
  if (c.ways == 0) return "associativity 0 (unknown)";
  if (c.line < 16 || c.line > 1024 || (c.line & (c.line - 1)) != 0) {
    return "a line size of " + std::to_string(c.line) + " bytes (not a power of two in [16, 1024])";
  }
  if (c.size % (static_cast<std::size_t>(c.ways) * c.line) != 0) {
    return "a size of " + std::to_string(c.size) + " bytes that is no whole number of sets of " +
           std::to_string(c.ways) + " ways x " + std::to_string(c.line) + " bytes";
  }
  if (c.size > most) {
    return "a size of " + std::to_string(c.size >> 20) + " MiB, beyond any level-" + std::to_string(level) + " cache built";
  }
  return {};
}

std::optional<CacheInfo> choose_cache(const std::vector<std::optional<CacheInfo>>& candidates, int level,
                                      std::string* why) {
  std::string passed;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const char* source = i == 0 ? "sysfs" : "CPUID";
    if (!candidates[i]) {
      passed += std::string(passed.empty() ? "" : "; ") + source + ": no description";
      continue;
    }
    const std::string problem = implausible_cache(*candidates[i], level);
    if (problem.empty()) return candidates[i];
    passed += std::string(passed.empty() ? "" : "; ") + source + ": " + problem;
  }
  if (why != nullptr) *why = passed;
  return std::nullopt;
}

std::optional<CacheInfo> cache_info(int level, bool instruction, std::string* why) {
  return choose_cache({sysfs_cache(level, instruction), cpuid_cache(level, instruction)}, level, why);
}

}  // namespace schedlab
