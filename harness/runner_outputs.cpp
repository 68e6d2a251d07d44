// runner_outputs.cpp: RunOutputs (runner.hpp), the files a run writes, created before the first
// case runs.
//
// Invariants: never over an existing file; a refusal (ParamError) leaves none of them behind.
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "chrome_trace.hpp"
#include "counters/hw_counters.hpp"
#include "csv.hpp"
#include "latency_file.hpp"
#include "row.hpp"
#include "runner.hpp"
#include "sidecar.hpp"

namespace schedlab {

RunOutputs::RunOutputs(const RunRequest& r, const std::vector<Case>& cases, const HwCounters& events)
    : geometry_(cache_geometry_for(r, cases)) {  // plan() has checked it
  try {
    if (!r.trace_path.empty()) trace_ = std::make_unique<ChromeTrace>(r.trace_path, r.trace_max_events);
    csv_ = std::make_unique<CsvWriter>(r.out_path, header());
    try {
      if (std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.records_latency(); })) {
        latency_ = std::make_unique<LatencyFile>(LatencyFile::path_for(r.out_path));
      }
      sidecar_ = std::make_unique<Sidecar>(r, events, cases, geometry_, csv_->row_counter());
    } catch (...) {
      ::unlink(r.out_path.c_str());  // created just now, holds only the header
      if (latency_) ::unlink(latency_->path().c_str());  // created just now, empty
      throw;
    }
  } catch (const std::runtime_error& e) {
    throw ParamError(e.what());  // refused before anything ran (the trace removes itself)
  }
}

RunOutputs::~RunOutputs() = default;

}  // namespace schedlab
