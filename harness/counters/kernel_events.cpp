// kernel_events.cpp: the kernel back end (kernel_events.hpp): the generic encodings, the
// perf_event_open call, and the texts that turn its errno into a reason a user can act on.
#include "counters/kernel_events.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace schedlab::counters {
namespace {

constexpr const char* kKernelPrefix = "kernel:";

constexpr std::uint64_t cache_config(std::uint64_t cache, std::uint64_t op, std::uint64_t result) {
  return cache | (op << 8) | (result << 16);
}

const KernelEvent kKernelEvents[] = {
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, true},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, true},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, true},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, false},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, false},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, false},
    {"L1-dcache-load-misses", PERF_TYPE_HW_CACHE,
     cache_config(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
                  PERF_COUNT_HW_CACHE_RESULT_MISS),
     false},
    {"LLC-load-misses", PERF_TYPE_HW_CACHE,
     cache_config(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ,
                  PERF_COUNT_HW_CACHE_RESULT_MISS),
     false},
};

}  // namespace


int perf_event_paranoid() {
  std::ifstream f("/proc/sys/kernel/perf_event_paranoid");
  int v = -1;
  if (!(f >> v)) return -1;
  return v;
}

std::string privilege_text() {
  const int p = perf_event_paranoid();
  return "perf_event_paranoid=" + (p < 0 ? std::string("unreadable") : std::to_string(p)) +
         (geteuid() == 0 ? ", running as root" : ", not root");
}

bool cpu_pmu_exposed() {
  return access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
         access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0;
}

pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

bool is_kernel_candidate(const std::string& candidate) {
  return candidate.rfind(kKernelPrefix, 0) == 0;
}

const KernelEvent* find_kernel_event(const std::string& candidate) {
  if (!is_kernel_candidate(candidate)) return nullptr;
  const std::string name = candidate.substr(std::strlen(kKernelPrefix));
  for (const KernelEvent& k : kKernelEvents) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

int open_kernel_event(const KernelEvent& k, bool exclude_kernel, pid_t tid, int group_fd) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = k.type;
  a.config = k.config;
  a.disabled = group_fd < 0 ? 1 : 0;
  a.exclude_kernel = exclude_kernel ? 1 : 0;
  a.read_format =
      PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  const long fd = syscall(SYS_perf_event_open, &a, tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

std::string kernel_open_error(const KernelEvent& k, int err) {
  std::string s = "perf_event_open: " + errno_text(err);
  if (err == ENOENT || err == EOPNOTSUPP || err == EINVAL) {
    if (!k.software) {
      s += cpu_pmu_exposed() ? " (this CPU's PMU has no such event)"
                             : " (the kernel exposes no hardware PMU here, as in a VM without "
                               "PMU passthrough)";
    }
  } else if (err == EACCES) {
    s += " (" + privilege_text() + ")";
  } else if (err == EPERM) {  // what container runtimes' default seccomp filters answer
    s += " (" + privilege_text() + "; or perf_event_open blocked by a seccomp filter)";
  }
  return s;
}

Tried try_kernel(const std::string& name, const KernelEvent* k, bool* exclude_kernel) {
  Tried t{name, false, ""};
  if (!k) {
    t.reason = "no such kernel event";
    return t;
  }
  int fd = open_kernel_event(*k, false, 0, -1);
  // Hardware events are still meaningful in user space alone; software events are not (they
  // happen in the kernel and would read 0).
  if ((fd == -EACCES || fd == -EPERM) && !k->software) {
    fd = open_kernel_event(*k, true, 0, -1);
    if (fd >= 0) *exclude_kernel = true;
  }
  if (fd >= 0) {
    close(fd);
    t.ok = true;
  } else {
    t.reason = kernel_open_error(*k, -fd);
  }
  return t;
}

}  // namespace schedlab::counters
