// sidecar.hpp: the run's metadata file, NAME.meta.json, while the run goes on.
//
// Created "running" before the first case runs, finished once ("complete", "failed" with the
// error, "interrupted"). In between it keeps ready what an abrupt end leaves instead
// (diagnostics.hpp): a stack overflow or a crash leaves it "failed" with the reason, a second
// interrupt "interrupted", never "running" on a process that is gone. metadata.hpp has the
// file's own rules (never overwritten, replaced atomically).
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "counters/cache_geometry.hpp"

#include "metadata.hpp"

namespace schedlab {

class HwCounters;
struct Case;
struct RunRequest;

// Every scheduler's and workload's parameters with their defaults, canonical, and the names of
// the machine-setup parameters: the sidecar's `parameters`, and `schedlab list --json`.
nlohmann::json parameter_defaults();

class Sidecar {
 public:
  // Creates the sidecar of r.out_path, never over an existing file. `rows` counts the CSV's rows
  // (read by an abrupt end). Throws std::runtime_error naming the file, the errno and the fix.
  // `geometry`: the simulator's and the model's, described when a case is simulated or modelled.
  Sidecar(const RunRequest& r, const HwCounters& events, const std::vector<Case>& cases,
          const std::optional<SimGeometry>& geometry, const std::atomic<std::size_t>& rows);
  ~Sidecar();  // forgets the prepared last words
  Sidecar(const Sidecar&) = delete;
  Sidecar& operator=(const Sidecar&) = delete;

  const std::string& run_id() const noexcept { return run_id_; }
  const std::string& path() const noexcept { return file_.path(); }

  // Names `label` as the case running in what an abrupt end leaves on disk. Called before
  // anything runs a case (a build, a warm-up, a repetition).
  void arm_last_words(const std::string& label);

  // Sets `key` to `value`, written with the run's end (finish): what the run learned as it went
  // (the speed probe's medians, the groups a budget forced).
  void record(const std::string& key, nlohmann::json value) { file_.data()[key] = std::move(value); }

  // The run's end: `status` is "complete", "failed" (with `error`) or "interrupted". Returns ""
  // or why the sidecar could not be written; never throws, so that the run's own error is the
  // one reported.
  std::string finish(const std::string& status, const std::string& error, std::size_t rows,
                     const HwCounters& events) noexcept;

 private:
  void prepare_last_words();

  MetadataFile file_;
  std::string run_id_;
  const std::atomic<std::size_t>& rows_;
};

}  // namespace schedlab
