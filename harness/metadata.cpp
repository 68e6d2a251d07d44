#include "metadata.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#include "build_info.hpp"
#include "cpu_pin.hpp"
#include "errno_text.hpp"

namespace schedlab {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

// Physical cores: distinct (package, core) pairs in sysfs's topology of every CPU; 0 when sysfs
// does not say (a container without it).
unsigned physical_cores() {
  std::set<std::pair<std::string, std::string>> cores;
  for (int cpu = 0;; ++cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) break;
    const std::string core = read_first_line(dir + "/topology/core_id");
    if (!core.empty()) cores.emplace(read_first_line(dir + "/topology/physical_package_id"), core);
  }
  return static_cast<unsigned>(cores.size());
}

// Writes all of `text` at the start of fd; 0, or the errno of the write that failed.
int write_text(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

// Blocks kept beyond a sidecar's end for its last rewrite on a full disk (overwrite_in_place):
// the finished sidecar adds its status, the error line and the row count, a few hundred bytes;
// 16 KiB holds any error schedlab prints. Without it a sidecar that happened to end near a block
// boundary could not be marked failed (seen: 36,862 bytes, 2 bytes short of its 9th block).
constexpr off_t kRewriteSlack = 16 * 1024;

// Creates (or, without O_EXCL in `flags`, truncates) `path` and writes `text`; 0 or the errno.
// Reserves kRewriteSlack more blocks where the file system can (best effort: the size stays).
int write_file(const std::string& path, const std::string& text, int flags) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  if (fd < 0) return errno;
  int err = write_text(fd, text);
  if (err == 0) (void)::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(text.size()) + kRewriteSlack);
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

// A full disk refuses a second copy: overwrites `path` in place with `text` when it fits in the
// blocks `path` already holds, so that no write needs a new one. True when done.
bool overwrite_in_place(const std::string& path, const std::string& text) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || static_cast<std::uint64_t>(st.st_blocks) * 512 < text.size()) return false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write_text(fd, text) == 0 && ::ftruncate(fd, static_cast<off_t>(text.size())) == 0;
  return ::close(fd) == 0 && ok;
}

std::string format_time(const char* fmt) {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

}  // namespace

nlohmann::json caches_json() {
  nlohmann::json out = nlohmann::json::object();
  const std::pair<const char*, std::pair<int, bool>> levels[] = {
      {"l1i", {1, true}}, {"l1d", {1, false}}, {"l2", {2, false}}, {"l3", {3, false}}};
  for (const auto& [name, where] : levels) {
    std::string why;
    if (const auto c = cache_info(where.first, where.second, &why)) {
      out[name] = {{"size", c->size}, {"ways", c->ways}, {"line", c->line}, {"from", c->from}};
    } else {
      out[name] = {{"unknown", why}};
    }
  }
  return out;
}

unsigned usable_cpus() { return static_cast<unsigned>(allowed_cpus().size()); }

std::string utc_timestamp() { return format_time("%Y-%m-%dT%H:%M:%SZ"); }
std::string compact_timestamp() { return format_time("%Y%m%d-%H%M%S"); }

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

nlohmann::json build_info() {
  nlohmann::json b;
  b["schedlab_version"] = SCHEDLAB_VERSION;
  b["build_type"] = SCHEDLAB_BUILD_TYPE;
  b["compiler"] = SCHEDLAB_COMPILER;  // CMake's compiler id and version, e.g. "GNU 12.2.0"
  b["compiler_flags"] = SCHEDLAB_COMPILER_FLAGS;
#ifdef NDEBUG
  b["assertions"] = false;
#else
  b["assertions"] = true;
#endif
#if defined(__SANITIZE_ADDRESS__)
  b["sanitizer"] = "address";
#elif defined(__SANITIZE_THREAD__)
  b["sanitizer"] = "thread";
#else
  b["sanitizer"] = "none";
#endif
  b["scheduler_counters_compiled"] = SCHEDLAB_STATS != 0;
  b["git_commit"] = SCHEDLAB_GIT_COMMIT;
  b["git_dirty"] = SCHEDLAB_GIT_DIRTY;
  return b;
}

std::string version_text() {
  const nlohmann::json b = build_info();
  const auto text = [&b](const char* key) { return b[key].get<std::string>(); };
  return "schedlab " + text("schedlab_version") + "\ncommit " + text("git_commit") +
         (b["git_dirty"].get<bool>() ? " (dirty tree)" : "") + "\nbuild " + text("build_type") + ", " +
         text("compiler") + ", assertions " + (b["assertions"].get<bool>() ? "on" : "off") + ", sanitizer " +
         text("sanitizer") + ", scheduler counters " + (b["scheduler_counters_compiled"].get<bool>() ? "on" : "off");
}

nlohmann::json machine_info() {
  nlohmann::json m;
  struct utsname u {};
  uname(&u);
  m["cpu_model"] = cpu_model();
  if (const unsigned cores = physical_cores(); cores != 0) m["cores"] = cores;
  m["logical_cpus"] = std::thread::hardware_concurrency();
  m["usable_cpus"] = usable_cpus();
  const auto bytes = [](int level) {
    const std::optional<CacheInfo> c = cache_info(level);
    return c ? nlohmann::json(c->size) : nlohmann::json();
  };
  m["cache_bytes"] = {{"l1d", bytes(1)}, {"l2", bytes(2)}, {"l3", bytes(3)}};
  m["caches"] = caches_json();
  m["kernel"] = std::string(u.sysname) + " " + u.release;
  m["host"] = host_name();
  m.update(build_info());
  m["perf_event_paranoid"] = read_first_line("/proc/sys/kernel/perf_event_paranoid");
  return m;
}

void MetadataFile::create() {
  const int err = write_file(path_, data_.dump(2) + "\n", O_EXCL);
  if (err == EEXIST) {
    throw std::runtime_error("metadata file " + path_ +
                             " already exists; choose another --out (results are never overwritten)");
  }
  if (err != 0) {
    ::unlink(path_.c_str());
    throw std::runtime_error("cannot write " + path_ + ": " + errno_text(err) +
                             "; free space or choose another --out");
  }
}

void MetadataFile::save() const {
  const std::string text = data_.dump(2) + "\n";
  const std::string tmp = path_ + ".tmp";
  int err = write_file(tmp, text, O_TRUNC);
  if (err == 0 && std::rename(tmp.c_str(), path_.c_str()) == 0) return;
  if (err == 0) err = errno;
  ::unlink(tmp.c_str());
  const bool full = err == ENOSPC || err == EDQUOT || err == EFBIG;
  if (full && overwrite_in_place(path_, text)) return;
  throw std::runtime_error("cannot write " + path_ + ": " + errno_text(err) + "; free space or choose another --out");
}

std::string path_beside_csv(const std::string& csv_path, const std::string& suffix) {
  const std::string ext = ".csv";
  if (csv_path.size() > ext.size() && csv_path.compare(csv_path.size() - ext.size(), ext.size(), ext) == 0) {
    return csv_path.substr(0, csv_path.size() - ext.size()) + suffix;
  }
  return csv_path + suffix;
}

std::string machine_timeline_path_for(const std::string& csv_path) { return path_beside_csv(csv_path, ".machine.json"); }

std::string write_new_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + path + ": " + errno_text(errno);
  int err = write_text(fd, text);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0) return "";
  ::unlink(path.c_str());
  return "cannot write " + path + ": " + errno_text(err);
}

std::string metadata_path_for(const std::string& csv_path) { return path_beside_csv(csv_path, ".meta.json"); }

}  // namespace schedlab
