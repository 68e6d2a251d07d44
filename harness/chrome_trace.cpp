#include "chrome_trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "errno_text.hpp"

namespace schedlab {
namespace {
constexpr char kOpening[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
}  // namespace

ChromeTrace::ChromeTrace(std::string path, std::size_t max_events)
    : path_(std::move(path)), left_(max_events), max_(max_events) {
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw std::runtime_error("cannot create trace file " + path_ + ": " + errno_text(err) +
                             (err == EEXIST ? "; choose another --trace path (files are never overwritten)"
                                            : "; choose another --trace path"));
  }
  file_ = ::fdopen(fd, "w");
  // The opening, flushed now: a full disk shows here, before the run.
  if (file_ == nullptr || std::fputs(kOpening, file_) < 0 || std::fflush(file_) != 0) {
    const int err = errno;
    if (file_ != nullptr) std::fclose(file_); else ::close(fd);
    file_ = nullptr;
    ::unlink(path_.c_str());
    throw std::runtime_error("cannot write trace file " + path_ + ": " + errno_text(err) +
                             "; free space or choose another --trace path");
  }
}

ChromeTrace::~ChromeTrace() {
  if (file_ != nullptr) std::fclose(file_);
  if (!written_) ::unlink(path_.c_str());
}

void ChromeTrace::add_run(const std::string& label, const std::vector<WorkerTrace>& workers,
                          std::uint64_t begin_ns, std::uint64_t end_ns, const std::string& note) {
  if (origin_ns_ == 0 && !workers.empty()) origin_ns_ = begin_ns;
  const int pid = static_cast<int>(processes_.size()) + 1;
  processes_.push_back(label);
  threads_.emplace_back();
  if (!note.empty()) notes_.push_back(label + ": " + note);
  for (const WorkerTrace& w : workers) {
    threads_.back().push_back(w.worker);
    for (TraceEvent e : w.events) {
      // Clip to the run; the file's times are then never before its origin (unsigned, so a
      // slice that began earlier would otherwise wrap around to centuries).
      e.begin_ns = std::clamp(e.begin_ns, begin_ns, end_ns);
      e.end_ns = std::clamp(e.end_ns, e.begin_ns, end_ns);
      if (left_ == 0) {
        ++dropped_;
        continue;
      }
      events_.push_back({pid, w.worker, e});
      --left_;
    }
    dropped_ += w.dropped;
  }
}

void ChromeTrace::write() {
  std::FILE* f = file_;
  auto str = [](const std::string& s) { return nlohmann::json(s).dump(); };
  bool first = true;
  auto sep = [&] {
    if (!first) std::fputs(",\n", f);
    first = false;
  };
  for (std::size_t p = 0; p < processes_.size(); ++p) {
    sep();
    std::fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%zu,\"tid\":0,\"args\":{\"name\":%s}}", p + 1,
                 str(processes_[p]).c_str());
    for (unsigned t : threads_[p]) {
      sep();
      std::fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%zu,\"tid\":%u,\"args\":{\"name\":\"worker %u\"}}",
                   p + 1, t, t);
    }
  }
  static const char* const kNames[] = {"task", "parked", "syscall", "steal"};
  for (const Event& ev : events_) {
    sep();
    const double ts = static_cast<double>(ev.e.begin_ns - origin_ns_) / 1e3;  // microseconds
    const char* name = kNames[static_cast<int>(ev.e.kind)];
    if (ev.e.kind == TraceKind::steal) {
      std::fprintf(f, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"%s\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"args\":{\"tasks\":%u}}",
                   name, ev.pid, ev.tid, ts, ev.e.arg);
    } else {
      const double dur = static_cast<double>(ev.e.end_ns - ev.e.begin_ns) / 1e3;
      std::fprintf(f, "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f}", name,
                   name, ev.pid, ev.tid, ts, dur);
    }
  }
  nlohmann::json other = {{"max_events", max_}, {"events", events_.size()}, {"dropped_events", dropped_},
                          {"notes", notes_}};
  std::fprintf(f, "\n],\"otherData\":%s}\n", other.dump().c_str());
  const bool ok = std::fflush(f) == 0 && std::ferror(f) == 0;
  const int err = errno;
  file_ = nullptr;
  if (std::fclose(f) != 0 || !ok) {
    ::unlink(path_.c_str());
    throw std::runtime_error("cannot write trace file " + path_ + ": " + errno_text(ok ? errno : err) +
                             "; free space or choose another --trace path");
  }
  written_ = true;
}

}  // namespace schedlab
