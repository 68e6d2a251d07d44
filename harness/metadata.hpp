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

#include "machine_caches.hpp"  // CacheInfo, cache_info: the caches the sidecar describes

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
