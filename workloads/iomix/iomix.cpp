// iomix: T tasks, each M loop iterations with a file read at the midpoint.
//
// The seeds' third program: 20 goroutines that compute, read a file, and compute again. The
// read is the point: a goroutine in a blocking syscall holds its thread, and Go's system monitor
// hands the thread's P to another thread once the call has lasted, so that the P's other
// goroutines keep running (entersyscall / sysmon's retake / exitsyscall); a read that does not
// block costs nothing of the kind. Here the read goes through schedlab::blocking(), which is
// where each scheduler shows what it does: steal-half does as Go (--handoff lazy; eager hands its
// processor over at every call), fair and central keep the worker blocked (their honest
// behaviour; see docs/schedulers.md), tbb and serial just call.
//
// prepare() writes `files` files of `file_size` bytes into a fresh directory (mkdtemp) and
// fsyncs them; cleanup() removes them. With `cold`, each read first drops the file's pages
// from the page cache (posix_fadvise DONTNEED, which the kernel honours for clean pages: hence
// the fsync), so the read goes to the device and blocking I/O can dominate. `reads_per_task`
// scales the I/O share further. The check: every task read exactly its files' bytes and ran
// all of its iterations.
//
// A file that is missing or unreadable when a task reads it is an error of that run (the
// exception reaches the root's join and the runner reports it), never a crash.
#include "iomix.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "api.hpp"
#include "errno_text.hpp"
#include "spin.hpp"

namespace schedlab {
namespace {


// Reads the whole file; returns its length. Runs inside blocking(): it may sleep in the kernel.
std::uint64_t read_whole_file(const std::string& path, bool cold) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error("cannot read " + path + ": " + errno_text(errno) +
                             "; the iomix files must stay in place while the run lasts");
  }
  if (cold) (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  // A buffer on the heap: fiber stacks are small (64 KiB by default).
  std::vector<char> buffer(64 * 1024);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw std::runtime_error("cannot read " + path + ": " + errno_text(err));
    }
    total += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  return total;
}

// Refuses a directory prepare() could not create its files in, before anything is written:
// by creating (and removing) a directory there, as prepare() will. access(W_OK) is not enough:
// root passes it on /proc and /sys, where nothing can be created (mkdir: ENOENT, EPERM).
void probe_writable(const std::string& dir) {
  std::string probe = dir + "/schedlab-iomix-probe-XXXXXX";
  if (::mkdtemp(probe.data()) == nullptr) {
    const int err = errno;
    throw std::invalid_argument("--io-dir " + dir + " is not writable (cannot create a directory in it: " +
                                errno_text(err) + "); choose a writable --io-dir");
  }
  ::rmdir(probe.c_str());
}

class IomixWorkload final : public ElidableWorkload<IomixWorkload> {
 public:
  explicit IomixWorkload(IomixParams p) : params_(std::move(p)) {
    if (params_.dir.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      params_.dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    }
    struct stat st {};
    if (::stat(params_.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw std::invalid_argument("--io-dir " + params_.dir +
                                  " is not a directory; create it or choose another --io-dir");
    }
    probe_writable(params_.dir);
  }
  ~IomixWorkload() override { cleanup(); }

  void prepare() override {
    std::string tmpl = params_.dir + "/schedlab-iomix-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw std::runtime_error("cannot create a directory in " + params_.dir + ": " + errno_text(errno) +
                               "; choose a writable --io-dir");
    }
    dir_ = tmpl;
    std::vector<char> block(64 * 1024);
    for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>('a' + i % 26);
    for (std::uint64_t f = 0; f < params_.files; ++f) {
      const std::string path = file_path(f);
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + errno_text(errno));
      std::uint64_t left = params_.file_size;
      while (left > 0) {
        const std::size_t chunk = left < block.size() ? static_cast<std::size_t>(left) : block.size();
        const ssize_t n = ::write(fd, block.data(), chunk);
        if (n <= 0) {
          const int err = n < 0 ? errno : ENOSPC;
          ::close(fd);
          throw std::runtime_error("cannot write " + path + ": " + errno_text(err) +
                                   "; free space or lower --file-size/--files");
        }
        left -= static_cast<std::uint64_t>(n);
      }
      // Dirty pages cannot be dropped: make them clean so that `cold` really goes to disk.
      ::fsync(fd);
      ::close(fd);
    }
  }

  template <class X>
  void body() {
    bytes_.store(0, std::memory_order_relaxed);
    increments_.store(0, std::memory_order_relaxed);
    typename X::WaitGroup wg;
    for (std::uint64_t t = 0; t < params_.tasks; ++t) {
      wg.go([this, t] {
        const std::uint64_t before = params_.iters / 2;
        std::uint64_t done = count_up(before);
        std::uint64_t read = 0;
        for (std::uint64_t r = 0; r < params_.reads_per_task; ++r) {
          const std::string path = file_path((t + r) % params_.files);
          read += X::blocking([&] { return read_whole_file(path, params_.cold); });
        }
        done += count_up(params_.iters - before);
        bytes_.fetch_add(read, std::memory_order_relaxed);
        increments_.fetch_add(done, std::memory_order_relaxed);
      });
    }
    wg.wait();
  }

  std::string check() override {
    const std::uint64_t want_bytes = params_.tasks * params_.reads_per_task * params_.file_size;
    const std::uint64_t want_increments = params_.tasks * params_.iters;
    if (bytes_.load() != want_bytes) {
      return "iomix read " + std::to_string(bytes_.load()) + " bytes, expected " + std::to_string(want_bytes);
    }
    if (increments_.load() != want_increments) {
      return "iomix counted " + std::to_string(increments_.load()) + " increments, expected " +
             std::to_string(want_increments);
    }
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override { return params_.tasks; }

  void cleanup() override {
    if (dir_.empty()) return;
    for (std::uint64_t f = 0; f < params_.files; ++f) ::unlink(file_path(f).c_str());
    ::rmdir(dir_.c_str());
    dir_.clear();
  }

  std::vector<std::pair<std::string, std::string>> external_args() const override {
    return {{"dir", dir_}};
  }

 private:
  std::string file_path(std::uint64_t f) const { return dir_ + "/file-" + std::to_string(f); }

  IomixParams params_;
  std::string dir_;  // created by prepare()
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> increments_{0};
};

}  // namespace

std::unique_ptr<Workload> make_iomix(IomixParams params) {
  if (params.files == 0) throw std::invalid_argument("--files 0: iomix needs at least one file; use --files 1 or more");
  return std::make_unique<IomixWorkload>(std::move(params));
}

}  // namespace schedlab
