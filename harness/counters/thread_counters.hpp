// thread_counters.hpp: counting one worker thread from another thread, which is how HwCounters
// counts each worker and how the probe checks that software events count. Two back ends behind
// one per-thread handle:
//   PAPI    an event set per worker, PAPI_attach'ed to its tid (PAPI opens perf events with
//           pid = tid underneath), multiplexed when the hardware events do not fit at once;
//   kernel  perf_event_open with the kernel's generic encodings, one group per worker for the
//           software events (one ioctl starts them all) and one per hardware event (so that the
//           kernel may time-share counters and we can scale by time_enabled/time_running).
// A Plan says which columns each back end counts; every thread's counters follow it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace schedlab::counters {

struct KernelEvent;
struct Probe;

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

// Builds the counting plan for `columns` from the probe. Columns whose event cannot join the
// others get `refused` set (index parallel to columns). Takes g_papi_mutex for the PAPI test.
Plan make_plan(const Probe& probe, const std::vector<std::size_t>& event_index,
               std::vector<std::string>& refused);

// One worker thread's open counters. Owns its descriptors and event set.
class ThreadCounters {
 public:
  ThreadCounters(const ThreadCounters&) = delete;
  ThreadCounters& operator=(const ThreadCounters&) = delete;
  ~ThreadCounters();

  enum class Status { ok, gone, out_of_fds, failed };

  // Opens the plan's events on `tid` (a thread of this process). On failure returns nullptr,
  // says whether the thread is gone or the process is out of descriptors, and sets *error.
  static std::unique_ptr<ThreadCounters> open(const Plan& plan, pid_t tid, Status* status,
                                              std::string* error);

  pid_t tid() const { return tid_; }

  // The open /proc comm file refers to the thread itself, not to its number: reading it fails
  // with ESRCH once the thread has exited, also after the tid has been given to a new thread.
  bool alive() const;

  // Counting starts at the first run and then never stops: a run is the difference of a read
  // here and one in stop(). Reads are the cheapest operation on both back ends: PAPI_start of
  // one of several attached sets made by one thread re-opens its perf events (PAPI keeps one
  // "current" control state per calling thread), and a perf ioctl (enable, disable, reset) on
  // another thread's event interrupts the CPU that thread last ran on, even when it sleeps,
  // where reading a sleeping thread's count does not.
  bool start(std::string* error);

  // Adds this thread's counts to `sum`; a column whose count cannot be read is marked in
  // `lost`. Sets *scaled when the kernel time-shared a counter.
  void stop(const Plan& plan, std::vector<long long>& sum, std::vector<bool>& lost, bool* scaled,
            std::vector<std::string>& notes);

 private:
  struct Group {
    std::vector<int> fds;            // fds[0] is the leader
    std::vector<std::size_t> slots;  // indices into plan.kernel, in read order
    bool enabled = false;
    std::vector<std::uint64_t> base;  // the read at this run's start
  };

  // Reads nr, time_enabled, time_running, then one cumulative value per member. On failure
  // `out` is zeros (and errno says why).
  static bool read_group(const Group& g, std::vector<std::uint64_t>& out);

  explicit ThreadCounters(pid_t tid);
  // On failure each sets *error, and *sys_errno to the errno of the system call that failed (0
  // when PAPI failed without one), so that open() classifies by the right errno.
  bool open_papi(const Plan& plan, std::string* error, int* sys_errno);
  bool open_kernel(const Plan& plan, std::string* error, int* sys_errno);

  pid_t tid_;
  int identity_fd_ = -1;
  int papi_set_;                      // PAPI_NULL until open_papi (set by the constructor)
  std::size_t papi_count_ = 0;        // events in the set, in plan.papi order
  bool papi_started_ = false;         // started at the first run, stopped when destroyed
  std::vector<long long> papi_base_;  // the read at this run's start
  bool running_ = false;
  std::vector<Group> groups_;
};

}  // namespace schedlab::counters
