#include "latency_file.hpp"

#include <unistd.h>

#include <stdexcept>

#include "csv.hpp"
#include "errno_text.hpp"
#include "metadata.hpp"
#include "plan.hpp"
#include "row.hpp"

namespace schedlab {

nlohmann::json distribution_json(const LatencyDistribution& d) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const LatencyBucket& b : d.buckets()) buckets.push_back({b.low, b.width, b.count});
  nlohmann::json out = {{"buckets", buckets}, {"count", d.count()}, {"max_exact", d.max_exact()}};
  out["max"] = d.max() ? nlohmann::json(*d.max()) : nlohmann::json(nullptr);
  return out;
}

LatencyDistribution distribution_from_json(const nlohmann::json& j) {
  std::vector<LatencyBucket> buckets;
  for (const nlohmann::json& b : j.at("buckets")) {
    buckets.push_back({b.at(0).get<std::uint64_t>(), b.at(1).get<std::uint64_t>(), b.at(2).get<std::uint64_t>()});
  }
  std::optional<std::uint64_t> max;
  if (j.value("max_exact", false) && j.contains("max") && j["max"].is_number()) max = j["max"].get<std::uint64_t>();
  return LatencyDistribution(std::move(buckets), max);
}

std::string LatencyFile::path_for(const std::string& csv_path) { return path_beside_csv(csv_path, ".latency.jsonl"); }

LatencyFile::LatencyFile(std::string path) : path_(std::move(path)), fd_(create_results_file(path_)) {}

LatencyFile::~LatencyFile() {
  if (fd_ >= 0) ::close(fd_);
}

void LatencyFile::write(const RowContext& r) {
  if (r.c.simulated) return;  // Valgrind's times: the row's latency cells are empty too (row.cpp)
  const nlohmann::json key = {{"run_id", r.run_id},
                              {"block_index", r.block},
                              {"rep", r.rep},
                              {"case", r.c.label()},
                              {"scheduler", r.c.scheduler->name},
                              {"scheduler_params", describe(r.c.scheduler->params, r.c.scheduler_params)},
                              {"workload", r.c.workload->name},
                              {"workload_params", describe(r.c.workload->params, r.c.workload_params)},
                              {"threads", r.c.threads}};
  auto line = [&key](const char* kind, const std::string& source, const LatencyDistribution& d) {
    nlohmann::json out = key;
    out["kind"] = kind;
    out["source"] = source;
    out.update(distribution_json(d));
    return out;
  };
  if (r.m.sched_delay) append(line("sched_delay", r.m.sched_delay_source, *r.m.sched_delay));
  if (r.m.request) {
    nlohmann::json out = line("request", "generator", r.m.request->latency);
    out["rate_per_s"] = r.m.request->rate_per_s;
    append(std::move(out));
  }
}

void LatencyFile::append(nlohmann::json line) {
  int cut_error = 0;
  if (const int err = append_whole_line(fd_, line.dump() + "\n", &committed_, &cut_error); err != 0) {
    throw std::runtime_error("cannot write a line to " + path_ + ": " + errno_text(err) +
                             (cut_error != 0 ? "; the partial line could not be cut off (" + errno_text(cut_error) + ")"
                                             : "; the lines before it are whole") +
                             "; free space (or raise the file-size limit) or choose another --out");
  }
}

}  // namespace schedlab
