// latency_file.hpp: NAME.latency.jsonl beside NAME.csv, the whole distribution of every latency
// a row summarises, so that figures need no re-run.
//
// The CSV gives each row's percentiles (row.cpp: delay_*, request_*); this file keeps the
// buckets they came from (latency.hpp: LatencyDistribution), one JSON line per row and kind,
// appended as the row is written, under the same rules as the CSV (csv.hpp): created for this
// run alone, never overwritten, a line whole or absent. A line:
//
//   {"run_id": ..., "block_index": 3, "rep": 0, "case": "steal-half latency=on ... threads=2",
//    "scheduler": "steal-half", "scheduler_params": "...", "workload": "netmix",
//    "workload_params": "...", "threads": 2, "kind": "sched_delay" | "request",
//    "source": "schedlab" | "go" | "generator", "count": N, "max": ns, "max_exact": true,
//    "rate_per_s": R (request only), "buckets": [[low_ns, width_ns, count], ...]}
//
// (run_id, block_index, rep, case) is the row's key in the CSV. The sidecar names the file
// (`latency_file`) and the bucket rule. scripts/schedlab_results/load.py reads it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <sys/types.h>

#include "latency.hpp"

namespace schedlab {

struct RowContext;

// A distribution as the file (and an A/B server's reply) holds it: {"buckets": [[low, width,
// count], ...], "count": N, "max": ns or null, "max_exact": bool}; and back.
nlohmann::json distribution_json(const LatencyDistribution& d);
LatencyDistribution distribution_from_json(const nlohmann::json& j);

class LatencyFile {
 public:
  // NAME.latency.jsonl for NAME.csv (or NAME).
  static std::string path_for(const std::string& csv_path);
  // Creates the file; throws std::runtime_error as the CSV does (csv.hpp).
  explicit LatencyFile(std::string path);
  ~LatencyFile();
  LatencyFile(const LatencyFile&) = delete;
  LatencyFile& operator=(const LatencyFile&) = delete;

  // The lines of one row: its scheduling delays and its requests' latency, those it has.
  // Throws std::runtime_error naming the file and the errno when a line cannot be written whole.
  void write(const RowContext& r);
  const std::string& path() const noexcept { return path_; }

 private:
  void append(nlohmann::json line);

  std::string path_;
  int fd_ = -1;
  off_t committed_ = 0;
};

}  // namespace schedlab
