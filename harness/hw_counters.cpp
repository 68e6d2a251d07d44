// hw_counters.cpp: see hw_counters.hpp. Two back ends behind one per-thread handle:
//   PAPI    an event set per worker, PAPI_attach'ed to its tid (PAPI opens perf events with
//           pid = tid underneath), multiplexed when the hardware events do not fit at once;
//   kernel  perf_event_open with the kernel's generic encodings, one group per worker for the
//           software events (one ioctl starts them all) and one per hardware event (so that the
//           kernel may time-share counters and we can scale by time_enabled/time_running).
// Every PAPI call goes through g_papi_mutex: PAPI's event-set setup is not thread-safe.
#include "hw_counters.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <papi.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <ostream>
#include <set>
#include <stdexcept>
#include <thread>

#include "params.hpp"

namespace schedlab {
namespace {

constexpr const char* kScope =
    "worker threads alive at run start; threads created during a run (steal-half hand-off) are "
    "not counted";
constexpr const char* kKernelPrefix = "kernel:";
constexpr std::size_t kMaxNotes = 50;

const std::vector<HwEvent> kEvents = {
    {"papi_l1_dcm",
     {"PAPI_L1_DCM", "perf::L1-DCACHE-LOAD-MISSES", "kernel:L1-dcache-load-misses"},
     true,
     "level 1 data cache misses"},
    {"papi_l2_dcm", {"PAPI_L2_DCM"}, true, "level 2 data cache misses (no generic kernel event)"},
    {"papi_l3_tcm",
     {"PAPI_L3_TCM", "perf::LLC-LOAD-MISSES", "perf::CACHE-MISSES", "kernel:LLC-load-misses",
      "kernel:cache-misses"},
     true,
     "last level cache misses (fallbacks count LLC load misses, or all cache misses)"},
    {"papi_tot_ins", {"PAPI_TOT_INS", "kernel:instructions"}, true, "instructions completed"},
    {"papi_tot_cyc", {"PAPI_TOT_CYC", "kernel:cycles"}, true, "core cycles"},
    {"perf_context_switches",
     {"perf::CONTEXT-SWITCHES", "kernel:context-switches"},
     false,
     "context switches of the worker threads"},
    {"perf_cpu_migrations",
     {"perf::CPU-MIGRATIONS", "kernel:cpu-migrations"},
     false,
     "moves of a worker thread to another CPU"},
    {"perf_page_faults",
     {"perf::PAGE-FAULTS", "kernel:page-faults"},
     false,
     "page faults taken by the worker threads"},
};

// ---- small helpers --------------------------------------------------------------------------

std::string errno_text(int e) { return std::strerror(e); }

// -1 when the file cannot be read (no perf_event support in the kernel at all).
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

// The core PMU ("cpu", or "cpu_core" on hybrid Intel parts) as the kernel registers it.
bool cpu_pmu_exposed() {
  return access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
         access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0;
}

pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int find_column(const std::string& name) {
  for (std::size_t i = 0; i < kEvents.size(); ++i) {
    if (kEvents[i].column == name) return static_cast<int>(i);
  }
  return -1;
}

[[noreturn]] void unknown_counter(const std::string& name) {
  std::string cols;
  for (const HwEvent& e : kEvents) cols += (cols.empty() ? "" : ", ") + e.column;
  throw ParamError("unknown counter '" + name +
                   "': choose from default, none, sw, cache, or a comma list of " + cols);
}

// ---- the kernel's generic encodings ---------------------------------------------------------

struct KernelEvent {
  const char* name;  // after "kernel:", as `perf stat -e` spells it
  std::uint32_t type;
  std::uint64_t config;
  bool software;
};

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

const KernelEvent* find_kernel_event(const std::string& candidate) {
  if (candidate.rfind(kKernelPrefix, 0) != 0) return nullptr;
  const std::string name = candidate.substr(std::strlen(kKernelPrefix));
  for (const KernelEvent& k : kKernelEvents) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

// Returns the fd, or -errno. Events are opened disabled; a group member follows its leader.
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

// ---- PAPI, process-wide ---------------------------------------------------------------------

std::mutex g_papi_mutex;

std::string papi_error(int code) {
  const char* s = PAPI_strerror(code);
  return (s ? std::string(s) : "PAPI error") + " (" + std::to_string(code) + ")";
}

struct PapiState {
  bool ok = false;            // library initialised
  std::string init;           // what happened at initialisation
  int perf_cidx = -1;         // the perf_event component
  std::string perf_disabled;  // its disabled reason, empty when enabled
  bool domain_all = false;    // PAPI_set_domain(PAPI_DOM_ALL) accepted
  bool multiplex_ok = false;  // PAPI_multiplex_init succeeded
  int hw_counters = 0;        // PAPI_num_cmp_hwctrs of perf_event
};

// Caller holds g_papi_mutex.
PapiState init_papi() {
  PapiState st;
  const int v = PAPI_library_init(PAPI_VER_CURRENT);
  if (v != PAPI_VER_CURRENT) {
    st.init = v > 0 ? "PAPI_library_init: header/library version mismatch"
                    : "PAPI_library_init: " + papi_error(v);
    return st;
  }
  st.ok = true;
  st.init = "PAPI " + std::to_string(PAPI_VERSION_MAJOR(PAPI_VERSION)) + "." +
            std::to_string(PAPI_VERSION_MINOR(PAPI_VERSION)) + "." +
            std::to_string(PAPI_VERSION_REVISION(PAPI_VERSION)) + " initialised";
  // Software events count in the kernel: the default user domain reads 0 for them.
  st.domain_all = PAPI_set_domain(PAPI_DOM_ALL) == PAPI_OK;
  st.multiplex_ok = PAPI_multiplex_init() == PAPI_OK;
  st.perf_cidx = PAPI_get_component_index("perf_event");
  if (st.perf_cidx >= 0) {
    if (const PAPI_component_info_t* ci = PAPI_get_component_info(st.perf_cidx)) {
      if (ci->disabled)
        st.perf_disabled = ci->disabled_reason[0] ? ci->disabled_reason : "disabled";
    }
    st.hw_counters = std::max(0, PAPI_num_cmp_hwctrs(st.perf_cidx));
  } else {
    st.perf_disabled = "not compiled into this PAPI";
  }
  return st;
}

// ---- probe: which candidate each column uses ------------------------------------------------

enum class Backend { papi, kernel };

struct Tried {
  std::string name;
  bool ok = false;
  std::string reason;
};

struct ProbedEvent {
  std::vector<Tried> tried;
  int chosen = -1;  // index into tried/candidates
  Backend backend = Backend::papi;
  const KernelEvent* kev = nullptr;
  bool exclude_kernel = false;  // kernel back end, hardware event, counted in user space only
  std::string refused;          // set when the candidate adds but does not really count
};

struct Probe {
  PapiState papi;
  int paranoid = -1;
  std::vector<ProbedEvent> events;  // parallel to kEvents
};

std::string event_label(const ProbedEvent& p) {
  if (p.chosen < 0) return "";
  std::string s = p.tried[p.chosen].name;
  if (p.exclude_kernel) s += ":u";
  return s;
}

bool probed_available(const ProbedEvent& p) { return p.chosen >= 0 && p.refused.empty(); }

std::string probed_reason(const ProbedEvent& p) {
  if (probed_available(p)) return "";
  if (!p.refused.empty()) return p.refused;
  std::string s;
  for (const Tried& t : p.tried) s += (s.empty() ? "" : "; ") + t.name + ": " + t.reason;
  return s;
}

// Creates an event set bound to component `cidx` (attach and multiplex both need that before
// events are added) and attached to thread `tid`: what the probe and each worker's counters do
// before adding events. On failure returns the PAPI error and names the failing call in *step;
// *set is then PAPI_NULL or a set for the caller to destroy. Caller holds g_papi_mutex.
int create_attached_set(int cidx, pid_t tid, int* set, const char** step) {
  *step = "PAPI_create_eventset";
  int r = PAPI_create_eventset(set);
  if (r != PAPI_OK) {
    *set = PAPI_NULL;
    return r;
  }
  *step = "PAPI_assign_eventset_component";
  if ((r = PAPI_assign_eventset_component(*set, cidx)) != PAPI_OK) return r;
  *step = "PAPI_attach";
  return PAPI_attach(*set, static_cast<unsigned long>(tid));
}

// Caller holds g_papi_mutex.
void destroy_set(int* set) {
  if (*set == PAPI_NULL) return;
  PAPI_cleanup_eventset(*set);
  PAPI_destroy_eventset(set);
}

// Caller holds g_papi_mutex.
Tried try_papi(const PapiState& st, const std::string& name) {
  Tried t{name, false, ""};
  if (!st.ok) {
    t.reason = st.init;
    return t;
  }
  // First whether the event exists, then the same steps as ThreadCounters::open_papi on this
  // thread: an event that adds but cannot be attached to a thread is of no use to us. (Seen on
  // a KVM guest with PAPI 7.0: the perf_event component is enabled and adds
  // perf::CONTEXT-SWITCHES, yet PAPI_attach answers "Event does not exist" for every event; the
  // kernel back end then counts them.)
  int set = PAPI_NULL;
  int r = PAPI_create_eventset(&set);
  if (r == PAPI_OK) r = PAPI_add_named_event(set, name.c_str());
  destroy_set(&set);
  std::string prefix;
  if (r == PAPI_OK) {
    const char* step = "";
    r = create_attached_set(st.perf_cidx, this_tid(), &set, &step);
    if (r == PAPI_OK) {
      step = "PAPI_add_named_event";
      r = PAPI_add_named_event(set, name.c_str());
    }
    destroy_set(&set);
    prefix = std::string("adds, but ") + step + ": ";
  }
  if (r == PAPI_OK) {
    t.ok = true;
  } else {
    t.reason = prefix + papi_error(r);
    if (!st.perf_disabled.empty())
      t.reason += " [PAPI perf_event component: " + st.perf_disabled + "]";
  }
  return t;
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

// ---- per-thread counting --------------------------------------------------------------------

struct Slot {
  std::size_t column;  // index into the HwCounters' columns
  std::string event;
  const KernelEvent* kev = nullptr;
  bool exclude_kernel = false;
};

struct Plan {
  std::vector<Slot> papi;  // in the order they are added to each event set
  std::vector<Slot> kernel;
  bool papi_multiplex = false;
  int papi_cidx = -1;
};

// One worker thread's open counters. Owns its descriptors and event set.
class ThreadCounters {
 public:
  ThreadCounters(const ThreadCounters&) = delete;
  ThreadCounters& operator=(const ThreadCounters&) = delete;
  ~ThreadCounters() {
    if (papi_set_ != PAPI_NULL) {
      std::lock_guard lock(g_papi_mutex);
      if (papi_started_) PAPI_stop(papi_set_, nullptr);
      destroy_set(&papi_set_);
    }
    for (Group& g : groups_) {
      for (int fd : g.fds) close(fd);
    }
    if (identity_fd_ >= 0) close(identity_fd_);
  }

  enum class Status { ok, gone, out_of_fds, failed };

  // Opens the plan's events on `tid` (a thread of this process). On failure returns nullptr,
  // says whether the thread is gone or the process is out of descriptors, and sets *error.
  static std::unique_ptr<ThreadCounters> open(const Plan& plan, pid_t tid, Status* status,
                                              std::string* error) {
    std::unique_ptr<ThreadCounters> t(new ThreadCounters(tid));
    // comm, not stat: the kernel formats the whole file on each read, and comm is short.
    const std::string path = "/proc/self/task/" + std::to_string(tid) + "/comm";
    t->identity_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    bool ok = t->identity_fd_ >= 0;
    if (!ok) *error = "thread " + std::to_string(tid) + ": " + path + ": " + errno_text(errno);
    ok = ok && (plan.papi.empty() || t->open_papi(plan, error));
    ok = ok && (plan.kernel.empty() || t->open_kernel(plan, error));
    if (ok) {
      *status = Status::ok;
      return t;
    }
    const int e = errno;  // of the failing call (PAPI_ESYS leaves the system's errno)
    const bool gone = t->identity_fd_ < 0 ? e == ENOENT || e == ESRCH : !t->alive();
    *status = gone                         ? Status::gone
              : e == EMFILE || e == ENFILE ? Status::out_of_fds
                                           : Status::failed;
    return nullptr;
  }

  pid_t tid() const { return tid_; }

  // The open /proc comm file refers to the thread itself, not to its number: reading it fails
  // with ESRCH once the thread has exited, also after the tid has been given to a new thread.
  bool alive() const {
    char c;
    return pread(identity_fd_, &c, 1, 0) == 1;
  }

  // Counting starts at the first run and then never stops: a run is the difference of a read
  // here and one in stop(). Reads are the cheapest operation on both back ends: PAPI_start of
  // one of several attached sets made by one thread re-opens its perf events (PAPI keeps one
  // "current" control state per calling thread), and a perf ioctl (enable, disable, reset) on
  // another thread's event interrupts the CPU that thread last ran on, even when it sleeps,
  // where reading a sleeping thread's count does not.
  bool start(std::string* error) {
    if (papi_set_ != PAPI_NULL) {
      std::lock_guard lock(g_papi_mutex);
      papi_base_.assign(papi_count_, 0);
      const int r = papi_started_ ? PAPI_read(papi_set_, papi_base_.data()) : PAPI_start(papi_set_);
      if (r != PAPI_OK) {
        *error = "thread " + std::to_string(tid_) +
                 (papi_started_ ? ": PAPI_read: " : ": PAPI_start: ") + papi_error(r);
        return false;
      }
      papi_started_ = true;  // PAPI_start zeroed the counts: the base is 0
    }
    for (Group& g : groups_) {
      if (!g.enabled) {
        if (ioctl(g.fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0) {
          *error =
              "thread " + std::to_string(tid_) + ": enabling perf events: " + errno_text(errno);
          return false;
        }
        g.enabled = true;
      }
      if (!read_group(g, g.base)) {
        *error = "thread " + std::to_string(tid_) + ": reading perf events: " + errno_text(errno);
        return false;
      }
    }
    running_ = true;
    return true;
  }

  // Adds this thread's counts to `sum`; a column whose count cannot be read is marked in
  // `lost`. Sets *scaled when the kernel time-shared a counter.
  void stop(const Plan& plan, std::vector<long long>& sum, std::vector<bool>& lost, bool* scaled,
            std::vector<std::string>& notes) {
    if (!running_) return;
    running_ = false;
    if (papi_set_ != PAPI_NULL) {
      std::vector<long long> v(papi_count_, 0);
      int r;
      {
        std::lock_guard lock(g_papi_mutex);
        r = PAPI_read(papi_set_, v.data());
      }
      for (std::size_t i = 0; i < papi_count_; ++i) {
        if (r == PAPI_OK) {
          // Exact without multiplexing; with it both reads are scaled estimates, whose
          // difference can come out slightly below 0 for a rare event.
          sum[plan.papi[i].column] += std::max(0LL, v[i] - papi_base_[i]);
        } else {
          lost[plan.papi[i].column] = true;
        }
      }
      if (r != PAPI_OK)
        notes.push_back("thread " + std::to_string(tid_) + ": PAPI_read: " + papi_error(r));
    }
    std::vector<std::uint64_t> now;
    for (Group& g : groups_) {
      const bool complete = read_group(g, now);
      const std::uint64_t enabled = now[1] - g.base[1], running = now[2] - g.base[2];
      // Task time only advances while the thread runs: a worker that stayed parked through the
      // run has enabled == 0 and truly counted nothing. Enabled but never running means the PMU
      // never had room for the event.
      const bool unreadable = !complete || (enabled > 0 && running == 0);
      for (std::size_t i = 0; i < g.slots.size(); ++i) {
        const std::size_t col = plan.kernel[g.slots[i]].column;
        if (unreadable) {
          lost[col] = true;
          continue;
        }
        long double value = static_cast<long double>(now[3 + i] - g.base[3 + i]);
        if (running < enabled) {
          value = value * static_cast<long double>(enabled) / static_cast<long double>(running);
          *scaled = true;
        }
        sum[col] += static_cast<long long>(value + 0.5L);
      }
      if (unreadable) {
        notes.push_back(
            "thread " + std::to_string(tid_) + ": " + plan.kernel[g.slots[0]].event +
            (complete ? ": never scheduled on the PMU" : ": read: " + errno_text(errno)));
      }
    }
  }

 private:
  struct Group {
    std::vector<int> fds;            // fds[0] is the leader
    std::vector<std::size_t> slots;  // indices into plan.kernel, in read order
    bool enabled = false;
    std::vector<std::uint64_t> base;  // the read at this run's start
  };

  // Reads nr, time_enabled, time_running, then one cumulative value per member. On failure
  // `out` is zeros (and errno says why).
  static bool read_group(const Group& g, std::vector<std::uint64_t>& out) {
    out.assign(3 + g.slots.size(), 0);
    const ssize_t want = static_cast<ssize_t>(out.size() * sizeof(std::uint64_t));
    const ssize_t n = read(g.fds[0], out.data(), static_cast<std::size_t>(want));
    if (n == want && out[0] == g.slots.size()) return true;
    out.assign(out.size(), 0);
    return false;
  }

  explicit ThreadCounters(pid_t tid) : tid_(tid) {}

  bool open_papi(const Plan& plan, std::string* error) {
    std::lock_guard lock(g_papi_mutex);
    const std::string who = "thread " + std::to_string(tid_) + ": ";
    const char* step = "";
    int r = create_attached_set(plan.papi_cidx, tid_, &papi_set_, &step);
    if (r != PAPI_OK) {
      *error = who + step + ": " + papi_error(r);
      return false;
    }
    if (plan.papi_multiplex && (r = PAPI_set_multiplex(papi_set_)) != PAPI_OK) {
      *error = who + "PAPI_set_multiplex: " + papi_error(r);
      return false;
    }
    for (const Slot& s : plan.papi) {
      if ((r = PAPI_add_named_event(papi_set_, s.event.c_str())) != PAPI_OK) {
        *error = who + "PAPI_add_named_event(" + s.event + "): " + papi_error(r);
        return false;
      }
    }
    papi_count_ = plan.papi.size();
    return true;
  }

  bool open_kernel(const Plan& plan, std::string* error) {
    Group software;
    for (std::size_t i = 0; i < plan.kernel.size(); ++i) {
      const Slot& s = plan.kernel[i];
      // Software events never compete for counters, so they share one group (one ioctl each
      // way); each hardware event is its own group so that the kernel can rotate them.
      Group single;
      Group& g = s.kev->software ? software : single;
      const int fd =
          open_kernel_event(*s.kev, s.exclude_kernel, tid_, g.fds.empty() ? -1 : g.fds[0]);
      if (fd < 0) {
        *error = "thread " + std::to_string(tid_) + ": " + s.event + ": " +
                 kernel_open_error(*s.kev, -fd);
        for (int f : software.fds) close(f);
        errno = -fd;
        return false;
      }
      g.fds.push_back(fd);
      g.slots.push_back(i);
      if (!s.kev->software) groups_.push_back(std::move(single));
    }
    if (!software.fds.empty()) groups_.push_back(std::move(software));
    return true;
  }

  pid_t tid_;
  int identity_fd_ = -1;
  int papi_set_ = PAPI_NULL;
  std::size_t papi_count_ = 0;        // events in the set, in plan.papi order
  bool papi_started_ = false;         // started at the first run, stopped when destroyed
  std::vector<long long> papi_base_;  // the read at this run's start
  bool running_ = false;
  std::vector<Group> groups_;
};

// Builds the counting plan for `columns` from the probe. Columns whose event cannot join the
// others get `refused` set (index parallel to columns). Takes g_papi_mutex for the PAPI test.
Plan make_plan(const Probe& probe, const std::vector<std::size_t>& event_index,
               std::vector<std::string>& refused) {
  Plan plan;
  plan.papi_cidx = probe.papi.perf_cidx;
  for (std::size_t c = 0; c < event_index.size(); ++c) {
    const ProbedEvent& p = probe.events[event_index[c]];
    if (!probed_available(p)) continue;
    Slot s{c, p.tried[p.chosen].name, p.kev, p.exclude_kernel};
    (p.backend == Backend::papi ? plan.papi : plan.kernel).push_back(s);
  }
  if (plan.papi.empty()) return plan;

  // Each event adds alone; find out whether they fit together, or only multiplexed.
  std::lock_guard lock(g_papi_mutex);
  auto try_together = [&](bool multiplex, std::vector<int>& failures) {
    failures.assign(plan.papi.size(), PAPI_OK);
    int set = PAPI_NULL;
    int r = PAPI_create_eventset(&set);
    if (r == PAPI_OK) r = PAPI_assign_eventset_component(set, plan.papi_cidx);
    if (r == PAPI_OK && multiplex) r = PAPI_set_multiplex(set);
    bool all = r == PAPI_OK;
    for (std::size_t i = 0; i < plan.papi.size(); ++i) {
      failures[i] = r == PAPI_OK ? PAPI_add_named_event(set, plan.papi[i].event.c_str()) : r;
      all = all && failures[i] == PAPI_OK;
    }
    destroy_set(&set);
    return all;
  };
  std::vector<int> failures;
  if (try_together(false, failures)) return plan;
  if (probe.papi.multiplex_ok) {
    std::vector<int> mpx_failures;
    try_together(true, mpx_failures);
    plan.papi_multiplex = true;
    failures = mpx_failures;
  }
  std::vector<Slot> kept;
  for (std::size_t i = 0; i < plan.papi.size(); ++i) {
    if (failures[i] == PAPI_OK) {
      kept.push_back(plan.papi[i]);
    } else {
      refused[plan.papi[i].column] =
          plan.papi[i].event + " cannot be counted together with the other selected events" +
          (plan.papi_multiplex ? ", even multiplexed: " : ": ") + papi_error(failures[i]);
    }
  }
  plan.papi = std::move(kept);
  if (plan.papi.empty()) plan.papi_multiplex = false;
  return plan;
}

// Software events are counted in the kernel. Where the kernel refuses kernel-side counting
// (perf_event_paranoid >= 2 for a non-root user, PAPI's user domain) they add fine and then
// read 0. Count them on this thread over a few sleeps and fresh page touches; one that reads 0
// is refused rather than written as 0 into every row.
void check_software_events(Probe& probe) {
  std::vector<std::size_t> sw;
  for (std::size_t i = 0; i < kEvents.size(); ++i) {
    if (!kEvents[i].hardware && probed_available(probe.events[i])) sw.push_back(i);
  }
  if (sw.empty()) return;
  std::vector<std::string> refused(sw.size());
  const Plan plan = make_plan(probe, sw, refused);
  ThreadCounters::Status status;
  std::string error;
  auto t = ThreadCounters::open(plan, this_tid(), &status, &error);
  std::vector<long long> sum(sw.size(), 0);
  std::vector<bool> lost(sw.size(), false);
  const bool failed = !t || !t->start(&error);
  if (!failed) {
    for (int i = 0; i < 5; ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t pages = 16;
    void* m =
        mmap(nullptr, page * pages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      for (std::size_t i = 0; i < pages; ++i) static_cast<volatile char*>(m)[i * page] = 1;
      munmap(m, page * pages);
    }
    bool scaled = false;
    std::vector<std::string> notes;
    t->stop(plan, sum, lost, &scaled, notes);
  }
  // Which back ends read 0 on an event that cannot be 0 after sleeping and faulting.
  std::set<Backend> zero_backends;
  for (std::size_t k = 0; k < sw.size(); ++k) {
    const std::string& col = kEvents[sw[k]].column;
    if ((col == "perf_context_switches" || col == "perf_page_faults") && sum[k] == 0) {
      zero_backends.insert(probe.events[sw[k]].backend);
    }
  }
  for (std::size_t k = 0; k < sw.size(); ++k) {
    ProbedEvent& p = probe.events[sw[k]];
    if (failed) {
      p.refused = "counting on a thread failed: " + error;
    } else if (!refused[k].empty()) {
      p.refused = refused[k];
    } else if (lost[k]) {
      p.refused = event_label(p) + ": the probe's count could not be read";
    } else if (zero_backends.count(p.backend)) {
      const std::string why = "kernel-side counting is refused (" + privilege_text() +
                              (p.backend == Backend::papi && !probe.papi.domain_all
                                   ? "; PAPI_set_domain(PAPI_DOM_ALL) was refused"
                                   : "") +
                              ")";
      const std::string& col = kEvents[sw[k]].column;
      p.refused =
          event_label(p) +
          ((col == "perf_context_switches" || col == "perf_page_faults") && sum[k] == 0
               ? " read 0 on a probe thread that slept 5 times and touched 16 fresh pages: "
               : " not trusted: context switches or page faults of the same back end read 0 "
                 "where they cannot: ") +
          why;
    }
  }
}

Probe run_probe() {
  Probe probe;
  probe.paranoid = perf_event_paranoid();
  {
    std::lock_guard lock(g_papi_mutex);
    probe.papi = init_papi();
  }
  probe.events.resize(kEvents.size());
  for (std::size_t i = 0; i < kEvents.size(); ++i) {
    ProbedEvent& p = probe.events[i];
    for (const std::string& cand : kEvents[i].candidates) {
      const KernelEvent* k = find_kernel_event(cand);
      const bool kernel = cand.rfind(kKernelPrefix, 0) == 0;
      bool exclude_kernel = false;
      Tried t;
      if (kernel) {
        t = try_kernel(cand, k, &exclude_kernel);
      } else {
        std::lock_guard lock(g_papi_mutex);
        t = try_papi(probe.papi, cand);
      }
      p.tried.push_back(t);
      if (t.ok) {
        p.chosen = static_cast<int>(p.tried.size()) - 1;
        p.backend = kernel ? Backend::kernel : Backend::papi;
        p.kev = k;
        p.exclude_kernel = exclude_kernel;
        break;
      }
    }
  }
  check_software_events(probe);
  return probe;
}

const Probe& probe() {
  static const Probe p = run_probe();  // thread-safe initialisation, once per process
  return p;
}

}  // namespace

// ---- public API -----------------------------------------------------------------------------

const std::vector<HwEvent>& hw_events() { return kEvents; }

std::vector<std::string> parse_counter_selection(const std::string& text) {
  std::vector<bool> chosen(kEvents.size(), false);
  std::size_t pos = 0;
  do {
    const std::size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item == "default") {
      chosen.assign(kEvents.size(), true);
    } else if (item == "none") {
      // selects nothing; "none" alone gives the empty selection
    } else if (item == "sw" || item == "cache") {
      for (std::size_t i = 0; i < kEvents.size(); ++i) {
        const bool cache = kEvents[i].column == "papi_l1_dcm" ||
                           kEvents[i].column == "papi_l2_dcm" || kEvents[i].column == "papi_l3_tcm";
        if (item == "sw" ? !kEvents[i].hardware : cache) chosen[i] = true;
      }
    } else {
      const int c = find_column(item);
      if (c < 0) unknown_counter(item);
      chosen[static_cast<std::size_t>(c)] = true;
    }
    pos = comma == std::string::npos ? std::string::npos : comma + 1;
  } while (pos != std::string::npos);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < kEvents.size(); ++i) {
    if (chosen[i]) out.push_back(kEvents[i].column);
  }
  return out;
}

struct HwCounters::Impl {
  std::vector<std::string> columns;
  std::vector<std::size_t> event_index;  // columns[i] is kEvents[event_index[i]]
  std::vector<CounterAvailability> availability;
  Plan plan;
  std::map<pid_t, std::unique_ptr<ThreadCounters>> cache;  // by tid, kept across runs
  std::vector<ThreadCounters*> active;                     // counting in this run
  std::vector<std::string> run_errors;                     // set-up failures of this run
  bool running = false;
  bool scaled = false;
  std::vector<std::string> notes;

  void note(const std::string& s) {
    if (std::find(notes.begin(), notes.end(), s) != notes.end()) return;
    if (notes.size() < kMaxNotes) {
      notes.push_back(s);
    } else if (notes.size() == kMaxNotes) {
      notes.push_back("(further notes omitted)");
    }
  }

  // Closes cached sets of threads that are gone: their descriptors would pile up as schedulers
  // come and go, and a set attached to a dead thread counts nothing.
  void sweep() {
    for (auto it = cache.begin(); it != cache.end();) {
      it = it->second->alive() ? std::next(it) : cache.erase(it);
    }
  }
};

HwCounters::HwCounters(std::vector<std::string> columns) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  for (const std::string& c : columns) {
    const int i = find_column(c);
    if (i < 0) unknown_counter(c);
    if (std::find(m.columns.begin(), m.columns.end(), c) != m.columns.end()) continue;
    m.columns.push_back(c);
    m.event_index.push_back(static_cast<std::size_t>(i));
  }
  const Probe& p = probe();
  std::vector<std::string> refused(m.columns.size());
  m.plan = make_plan(p, m.event_index, refused);
  for (std::size_t c = 0; c < m.columns.size(); ++c) {
    const ProbedEvent& e = p.events[m.event_index[c]];
    CounterAvailability a{m.columns[c], "", false, ""};
    if (probed_available(e) && refused[c].empty()) {
      a.available = true;
      a.event = event_label(e);
      if (e.exclude_kernel) a.reason = "counted in user space only (" + privilege_text() + ")";
    } else {
      a.reason = refused[c].empty() ? probed_reason(e) : refused[c];
    }
    m.availability.push_back(std::move(a));
  }
}

HwCounters::~HwCounters() = default;
HwCounters::HwCounters(HwCounters&&) noexcept = default;
HwCounters& HwCounters::operator=(HwCounters&&) noexcept = default;

const std::vector<std::string>& HwCounters::columns() const { return impl_->columns; }
const std::vector<CounterAvailability>& HwCounters::availability() const {
  return impl_->availability;
}
bool HwCounters::multiplexed() const { return impl_->plan.papi_multiplex || impl_->scaled; }
const std::vector<std::string>& HwCounters::notes() const { return impl_->notes; }

void HwCounters::start(const std::vector<pid_t>& tids) {
  Impl& m = *impl_;
  if (m.running) throw std::logic_error("HwCounters::start: the previous run was not stopped");
  m.running = true;
  m.active.clear();
  m.run_errors.clear();
  if (m.plan.papi.empty() && m.plan.kernel.empty()) return;  // nothing available or selected

  // New threads: an earlier scheduler's may be gone, and a dead thread's cached set must not
  // stand in for a new thread that got its tid. (Cheap: one pread per cached thread.)
  if (std::any_of(tids.begin(), tids.end(), [&](pid_t t) { return !m.cache.count(t); })) m.sweep();
  // Open what is missing first, so that the counters of all threads start close together.
  std::vector<ThreadCounters*> ready;
  for (pid_t tid : tids) {
    if (tid <= 0) {
      // A worker that has not published its tid yet still runs tasks: without it the sums
      // would be partial, so this run reports none.
      const std::string e =
          "a worker's tid was not known at run start (" + std::to_string(tid) +
          "): that run's counters are not reported (the scheduler should publish its workers' "
          "tids before its first run)";
      m.run_errors.push_back(e);
      m.note(e);
      continue;
    }
    auto it = m.cache.find(tid);
    if (it != m.cache.end() && !it->second->alive()) {
      m.cache.erase(it);  // exited, or the tid now names another thread
      it = m.cache.end();
    }
    if (it == m.cache.end()) {
      ThreadCounters::Status status;
      std::string error;
      auto t = ThreadCounters::open(m.plan, tid, &status, &error);
      if (status == ThreadCounters::Status::out_of_fds) {
        // Sets cached for other schedulers' threads hold descriptors (up to 9 per thread):
        // give them up, the current run's threads come first.
        for (auto c = m.cache.begin(); c != m.cache.end();) {
          c = std::find(tids.begin(), tids.end(), c->first) == tids.end() ? m.cache.erase(c)
                                                                          : std::next(c);
        }
        t = ThreadCounters::open(m.plan, tid, &status, &error);
      }
      if (!t) {
        if (status == ThreadCounters::Status::gone) {
          m.note("worker thread " + std::to_string(tid) + " was gone at run start; not counted");
        } else {
          m.run_errors.push_back(error);
          m.note(error);
        }
        continue;
      }
      it = m.cache.emplace(tid, std::move(t)).first;
    }
    if (std::find(ready.begin(), ready.end(), it->second.get()) == ready.end()) {
      ready.push_back(it->second.get());
    }
  }
  for (ThreadCounters* t : ready) {
    std::string error;
    if (t->start(&error)) {
      m.active.push_back(t);
    } else {
      m.run_errors.push_back(error);
      m.note(error);
    }
  }
}

std::vector<std::pair<std::string, std::optional<long long>>> HwCounters::stop() {
  Impl& m = *impl_;
  if (!m.running) throw std::logic_error("HwCounters::stop without start");
  m.running = false;
  const std::size_t n = m.columns.size();
  std::vector<long long> sum(n, 0);
  std::vector<bool> lost(n, false);
  std::vector<std::string> notes;
  for (ThreadCounters* t : m.active) t->stop(m.plan, sum, lost, &m.scaled, notes);
  for (const std::string& s : notes) m.note(s);
  // Threads that exited during the run: their counts up to the exit were read above.
  for (ThreadCounters* t : m.active) {
    if (!t->alive()) {
      m.note("worker thread " + std::to_string(t->tid()) +
             " exited during a run; its counts up to its exit are included");
      m.cache.erase(t->tid());
    }
  }
  const bool measured = !m.active.empty() && m.run_errors.empty();
  if (m.active.empty() && m.run_errors.empty() &&
      (!m.plan.papi.empty() || !m.plan.kernel.empty())) {
    m.note("a run had no worker threads to count (the scheduler reports none)");
  }
  m.active.clear();
  std::vector<std::pair<std::string, std::optional<long long>>> out;
  out.reserve(n);
  for (std::size_t c = 0; c < n; ++c) {
    std::optional<long long> v;
    if (m.availability[c].available && measured && !lost[c]) v = sum[c];
    out.emplace_back(m.columns[c], v);
  }
  return out;
}

nlohmann::json counter_metadata(const HwCounters& counters) {
  nlohmann::json available = nlohmann::json::array();
  nlohmann::json unavailable = nlohmann::json::object();
  nlohmann::json events = nlohmann::json::object();
  for (const CounterAvailability& a : counters.availability()) {
    if (a.available) {
      available.push_back(a.column);
      events[a.column] = a.event;
    } else {
      unavailable[a.column] = a.reason;
    }
  }
  return {{"available", available}, {"unavailable", unavailable},
          {"events", events},       {"multiplexed", counters.multiplexed()},
          {"scope", kScope},        {"notes", counters.notes()}};
}

int print_counter_report(std::ostream& out) {
  const Probe& p = probe();
  out << "Hardware and kernel event counters (--counters)\n";
  out << "  " << p.papi.init << "\n";
  if (p.papi.ok) {
    out << "  PAPI perf_event component: "
        << (p.papi.perf_disabled.empty() ? "enabled" : "disabled: " + p.papi.perf_disabled)
        << "; hardware counters: " << p.papi.hw_counters << "\n";
    out << "  PAPI_set_domain(PAPI_DOM_ALL): " << (p.papi.domain_all ? "ok" : "refused")
        << "; multiplexing support: " << (p.papi.multiplex_ok ? "ok" : "unavailable") << "\n";
  }
  out << "  /proc/sys/kernel/perf_event_paranoid: "
      << (p.paranoid < 0 ? std::string("unreadable (no perf_event support?)")
                         : std::to_string(p.paranoid))
      << (geteuid() == 0 ? " (running as root)" : " (not root)") << "\n";
  out << "  hardware PMU exposed by the kernel: " << (cpu_pmu_exposed() ? "yes" : "no") << "\n\n";

  const HwCounters all(parse_counter_selection("default"));
  for (std::size_t i = 0; i < kEvents.size(); ++i) {
    const CounterAvailability& a = all.availability()[i];
    out << "  " << a.column << std::string(a.column.size() < 24 ? 24 - a.column.size() : 1, ' ')
        << (a.available ? "available    " + a.event : std::string("unavailable")) << "\n";
    out << "      " << kEvents[i].what << (kEvents[i].hardware ? " [hardware]" : " [software]")
        << "\n";
    for (const Tried& t : p.events[i].tried) {
      out << "      " << t.name << ": " << (t.ok ? "usable" : t.reason) << "\n";
    }
    if (!a.available && !p.events[i].refused.empty()) out << "      => " << a.reason << "\n";
    if (a.available && !a.reason.empty()) out << "      note: " << a.reason << "\n";
  }

  // Third-party counting, as the harness does it: this thread counts a helper thread that
  // sleeps 50 times.
  out << "\n  counting another thread (attach by tid): ";
  HwCounters sw(parse_counter_selection("perf_context_switches"));
  if (!sw.availability()[0].available) {
    out << "not checked (context switches unavailable)\n";
  } else {
    std::atomic<pid_t> tid{0};
    std::atomic<bool> go{false};
    std::thread helper([&] {
      tid = this_tid();
      while (!go) std::this_thread::yield();
      for (int i = 0; i < 50; ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
    while (tid == 0) std::this_thread::yield();
    sw.start({tid.load()});
    go = true;
    helper.join();
    const auto v = sw.stop();
    out << (v[0].second
                ? "works (" + std::to_string(*v[0].second) + " context switches over 50 sleeps)"
                : std::string("failed"))
        << "\n";
  }
  out << "  multiplexing for the default selection: " << (all.multiplexed() ? "yes" : "no") << "\n";
  out << "  scope: " << kScope << "\n";
  return 0;
}

}  // namespace schedlab
