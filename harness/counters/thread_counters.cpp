// thread_counters.cpp: the plan and one thread's counters (thread_counters.hpp): opening a
// worker's PAPI event set and perf_event groups, and turning two reads into one run's counts.
#include "counters/thread_counters.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <papi.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "counters/kernel_events.hpp"
#include "counters/papi.hpp"
#include "counters/probe.hpp"

namespace schedlab::counters {
namespace {

// Adds the plan's PAPI events to one event set, multiplexed or not: failures[i] is PAPI_OK or
// why event i did not join. True when all joined. Caller holds g_papi_mutex.
bool add_together(const Plan& plan, bool multiplex, std::vector<int>& failures) {
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
}

}  // namespace

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
  std::vector<int> failures;
  if (add_together(plan, false, failures)) return plan;
  if (probe.papi.multiplex_ok) {
    std::vector<int> mpx_failures;
    add_together(plan, true, mpx_failures);
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

ThreadCounters::ThreadCounters(pid_t tid) : tid_(tid), papi_set_(PAPI_NULL) {}

ThreadCounters::~ThreadCounters() {
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

std::unique_ptr<ThreadCounters> ThreadCounters::open(const Plan& plan, pid_t tid, Status* status,
                                                     std::string* error) {
  std::unique_ptr<ThreadCounters> t(new ThreadCounters(tid));
  // comm, not stat: the kernel formats the whole file on each read, and comm is short.
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/comm";
  t->identity_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  int e = 0;  // the errno of the call that failed; 0 for a PAPI failure that has none
  bool ok = t->identity_fd_ >= 0;
  if (!ok) {
    e = errno;
    *error = "thread " + std::to_string(tid) + ": " + path + ": " + errno_text(e);
  }
  ok = ok && (plan.papi.empty() || t->open_papi(plan, error, &e));
  ok = ok && (plan.kernel.empty() || t->open_kernel(plan, error, &e));
  if (ok) {
    *status = Status::ok;
    return t;
  }
  const bool gone = t->identity_fd_ < 0 ? e == ENOENT || e == ESRCH : !t->alive();
  *status = gone ? Status::gone : e == EMFILE || e == ENFILE ? Status::out_of_fds : Status::failed;
  return nullptr;
}

bool ThreadCounters::alive() const {
  char c;
  return pread(identity_fd_, &c, 1, 0) == 1;
}

bool ThreadCounters::start(std::string* error) {
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
        *error = "thread " + std::to_string(tid_) + ": enabling perf events: " + errno_text(errno);
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

void ThreadCounters::stop(const Plan& plan, std::vector<long long>& sum, std::vector<bool>& lost,
                          bool* scaled, std::vector<std::string>& notes) {
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
      notes.push_back("thread " + std::to_string(tid_) + ": " + plan.kernel[g.slots[0]].event +
                      (complete ? ": never scheduled on the PMU" : ": read: " + errno_text(errno)));
    }
  }
}

bool ThreadCounters::read_group(const Group& g, std::vector<std::uint64_t>& out) {
  out.assign(3 + g.slots.size(), 0);
  const ssize_t want = static_cast<ssize_t>(out.size() * sizeof(std::uint64_t));
  const ssize_t n = read(g.fds[0], out.data(), static_cast<std::size_t>(want));
  if (n == want && out[0] == g.slots.size()) return true;
  out.assign(out.size(), 0);
  return false;
}

bool ThreadCounters::open_papi(const Plan& plan, std::string* error, int* sys_errno) {
  std::lock_guard lock(g_papi_mutex);
  const std::string who = "thread " + std::to_string(tid_) + ": ";
  // PAPI_ESYS leaves the system's errno; any other PAPI error has none (errno is stale then).
  auto failed = [&](int r, const std::string& step) {
    *sys_errno = r == PAPI_ESYS ? errno : 0;
    *error = who + step + ": " + papi_error(r);
    return false;
  };
  const char* step = "";
  int r = create_attached_set(plan.papi_cidx, tid_, &papi_set_, &step);
  if (r != PAPI_OK) return failed(r, step);
  if (plan.papi_multiplex && (r = PAPI_set_multiplex(papi_set_)) != PAPI_OK) {
    return failed(r, "PAPI_set_multiplex");
  }
  for (const Slot& s : plan.papi) {
    if ((r = PAPI_add_named_event(papi_set_, s.event.c_str())) != PAPI_OK) {
      return failed(r, "PAPI_add_named_event(" + s.event + ")");
    }
  }
  papi_count_ = plan.papi.size();
  return true;
}

bool ThreadCounters::open_kernel(const Plan& plan, std::string* error, int* sys_errno) {
  Group software;
  for (std::size_t i = 0; i < plan.kernel.size(); ++i) {
    const Slot& s = plan.kernel[i];
    // Software events never compete for counters, so they share one group (one ioctl each
    // way); each hardware event is its own group so that the kernel can rotate them.
    Group single;
    Group& g = s.kev->software ? software : single;
    const int fd = open_kernel_event(*s.kev, s.exclude_kernel, tid_, g.fds.empty() ? -1 : g.fds[0]);
    if (fd < 0) {
      *error =
          "thread " + std::to_string(tid_) + ": " + s.event + ": " + kernel_open_error(*s.kev, -fd);
      for (int f : software.fds) close(f);
      *sys_errno = -fd;
      return false;
    }
    g.fds.push_back(fd);
    g.slots.push_back(i);
    if (!s.kev->software) groups_.push_back(std::move(single));
  }
  if (!software.fds.empty()) groups_.push_back(std::move(software));
  return true;
}

}  // namespace schedlab::counters
