// schedtrace.cpp: see schedtrace.hpp; the tracer's thread prints, the runner's thread only
// says what to watch.
#include "schedtrace.hpp"

namespace schedlab {

std::string schedtrace_line(long long ms, const std::optional<SchedSnapshot>& s, const std::string& scheduler) {
  std::string line = "SCHED " + std::to_string(ms) + "ms: ";
  if (!s) return line + scheduler + " does not expose its queues";
  line += "gomaxprocs=" + std::to_string(s->procs) + " idleprocs=" + std::to_string(s->idle_procs) +
          " threads=" + std::to_string(s->threads) + " spinningthreads=" + std::to_string(s->spinning) +
          " runqueue=" + std::to_string(s->global_queue) + " [";
  for (std::size_t i = 0; i < s->local_queues.size(); ++i) {
    if (i != 0) line += ' ';
    line += std::to_string(s->local_queues[i]);
  }
  return line + "]";
}

std::string schedtrace_header(const std::string& case_label) { return "schedtrace case: " + case_label; }

SchedTracer::SchedTracer(unsigned interval_ms, std::FILE* out) : interval_ms_(interval_ms), out_(out) {
  if (interval_ms_ != 0) thread_ = std::thread([this] { loop(); });
}

SchedTracer::~SchedTracer() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SchedTracer::watch(const Scheduler* s, const std::string& name, const std::string& label) {
  if (interval_ms_ == 0) return;
  std::lock_guard lock(mutex_);
  watched_ = s;
  name_ = name;
  label_ = label;
}

void SchedTracer::loop() {
  std::unique_lock lock(mutex_);
  auto next = start_;
  for (;;) {
    next += std::chrono::milliseconds(interval_ms_);
    if (cv_.wait_until(lock, next, [this] { return stop_; })) return;
    if (watched_ == nullptr) continue;
    // The lock keeps the watched scheduler alive: the runner unwatches it before destroying it.
    const long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - start_).count();
    const std::string line = schedtrace_line(ms, watched_->snapshot(), name_);
    if (label_ != label_printed_) {
      label_printed_ = label_;
      std::fprintf(out_, "%s\n", schedtrace_header(label_).c_str());
    }
    std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
  }
}

}  // namespace schedlab
