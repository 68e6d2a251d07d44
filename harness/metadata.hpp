// metadata.hpp: what a results file needs beside its rows to be trusted later.
//
// Every CSV has a sidecar NAME.meta.json: the machine (CPU model, cores, caches, kernel), the
// build (compiler, flags, git commit, dirty tree), the command line, which counters could be
// read and why the others could not, and the run's status. The sidecar is created when the run
// starts (status "running"; never over an existing file) and replaced atomically (write, then
// rename) when anything changes, so it is never half written either. On a full disk, where the
// new text cannot be written beside the old one, it is written over the old one in place when
// it fits in the space the old one holds: a sidecar that says "failed" and why is worth more
// than the atomic replacement that a full disk refuses.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace schedlab {

// Facts about this machine and this build (build_info's included).
nlohmann::json machine_info();

// This binary: version, build type, compiler and its flags, assertions, sanitizer, git commit
// and dirty tree (the generated build_info.hpp and metadata.cpp's compile definitions).
nlohmann::json build_info();

// build_info() as the lines `schedlab --version` prints (no final newline).
std::string version_text();

// CPUs this process may run on (its affinity mask, as taskset sets it), at least 1.
unsigned usable_cpus();

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

// The caches as the sidecar's `machine.caches` records them: each level's size, ways, line and
// source, or why it is unknown.
nlohmann::json caches_json();

// "2026-11-22T15:31:14Z"
std::string utc_timestamp();
// "20261122-153114"
std::string compact_timestamp();
std::string host_name();

class MetadataFile {
 public:
  explicit MetadataFile(std::string path) : path_(std::move(path)) {}
  nlohmann::json& data() noexcept { return data_; }
  const std::string& path() const noexcept { return path_; }
  // Creates path (never over an existing file) and writes the data. Throws std::runtime_error
  // naming the file, the errno and the fix; a file it created is removed.
  void create();
  // Writes path.tmp and renames it over path (in place on a full disk, see above). Throws
  // std::runtime_error naming the file and the errno; no path.tmp is left behind.
  void save() const;

 private:
  std::string path_;
  nlohmann::json data_ = nlohmann::json::object();
};

// results/x.csv -> results/x.meta.json
std::string metadata_path_for(const std::string& csv_path);
// results/x.csv (or results/x) -> results/x + suffix: the files a run writes beside its CSV.
std::string path_beside_csv(const std::string& csv_path, const std::string& suffix);
// results/x.csv -> results/x.machine.json: the machine's timeline (machine_timeline.hpp), too
// long for the sidecar, which names it.
std::string machine_timeline_path_for(const std::string& csv_path);

// Writes `text` to `path`, a new file (never over an existing one), whole or not at all: a
// write that fails removes what it wrote. "" when done, else the line naming the file and the
// errno.
std::string write_new_file(const std::string& path, const std::string& text);

}  // namespace schedlab
