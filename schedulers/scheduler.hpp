// scheduler.hpp: what the harness sees of a scheduler, and what the task API calls.
//
// A Scheduler owns its worker threads for its whole life; the harness constructs one per
// (scheduler, configuration, thread count) and calls run() once per repetition. Each backend
// (fiber runtimes, tbb, serial, os-threads) implements the executor half: spawn, join, wait and
// the blocking-call bracket. Workloads never see this class; they use api.hpp.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "counters.hpp"
#include "latency.hpp"
#include "safepoint.hpp"
#include "sync/sync_object.hpp"
#include "sync/waiter.hpp"
#include "task.hpp"
#include "trace.hpp"

namespace schedlab {

// What a task waits for on a non-blocking descriptor (api.hpp: Socket, wait_readable).
enum class IoWait : std::uint8_t { readable, writable };
// A descriptor's registration with a scheduler's network poller (runtime/poller.hpp); opaque
// to the task API, which only hands it back.
struct PollDesc;

// A scheduler's state at one instant, as Go's schedtrace prints it. Read without stopping the
// workers, so the figures are each exact but not mutually consistent (Go's are the same).
struct SchedSnapshot {
  unsigned procs = 0;          // processors (GOMAXPROCS)
  unsigned idle_procs = 0;     // processors with nothing to run
  unsigned threads = 0;        // worker threads started
  unsigned spinning = 0;       // threads looking for work without a processor's work
  std::uint64_t global_queue = 0;          // tasks in the shared queue
  std::vector<std::uint64_t> local_queues;  // tasks in each processor's queue (empty if none)
};

// Every worker has been asleep for a while, the root has not finished and nothing can wake
// anyone: the run can never end. what() says how many tasks were stuck where, and which task
// waits on which channel or mutex. Also what a channel or mutex operation throws inside a task
// when the deadlock watch gives up on it (SyncObject::abandon).
class DeadlockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The run needed more than the process may have: a worker thread that could not be started, a
// fiber stack that could not be mapped, the memory budget (memory_budget.hpp). what() is one
// line naming the resource and the fix. A scheduler that threw it during a run cannot run again.
class ResourceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a backend that starts its own worker threads says when the kernel refuses one (the
// std::system_error std::thread throws): `which` names the thread ("3 of 200"), `error` is the
// errno. The message names the limits and the fix.
ResourceError worker_thread_refused(const std::string& which, int error);
// Room for one resource failure's message where it must be written without allocating (a
// worker out of memory; the room is reserved, or on the stack, beforehand). The longest, the
// fiber runtime's memory budget report, is about 330 characters. Kept small because a worker may
// format its message on a task's fiber stack (16 KiB at the smallest --stack-size).
inline constexpr std::size_t kResourceMessageRoom = 512;
// Writes into out (size bytes, no allocation: the process may have no memory left) what a
// backend says when its worker thread `number` of `threads` started but cannot get `what` (memory
// to start, its first fiber stack); `cause` is the exception's what().
void worker_out_of_memory(char* out, std::size_t size, unsigned number, unsigned threads, const char* what,
                          const char* cause) noexcept;

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Runs `root` as a task and returns when it has finished. Because joins are structured
  // (handles and wait groups join what they spawned), that is also when every task it spawned
  // has finished. Rethrows root's exception. Throws std::logic_error if another run is active
  // in this process, and std::runtime_error if a task's exception was never observed.
  void run(const std::function<void()>& root);

  // Cumulative counters since construction (subtract two snapshots for one run).
  virtual CounterSet counters() const = 0;
  // Kernel thread ids of the worker threads, for per-thread hardware counters. Empty when the
  // backend's threads are not long-lived (os-threads).
  virtual std::vector<pid_t> worker_tids() const = 0;
  // Worker threads this scheduler runs tasks on (the --threads it was built with).
  virtual unsigned threads() const = 0;
  // The queues and threads now, for --schedtrace; nullopt when the backend hides them (tbb).
  // Callable from any thread while run() is active.
  virtual std::optional<SchedSnapshot> snapshot() const { return std::nullopt; }
  // Records a timeline of the next run(), at most `max_events` events over all workers, and
  // returns false if this backend cannot (tbb, serial, os-threads). Call between runs.
  virtual bool trace_next_run(std::size_t /*max_events*/) { return false; }
  // The timeline of the traced run, one entry per worker thread. Call after that run.
  virtual std::vector<WorkerTrace> take_trace() { return {}; }
  // The scheduling delays (latency.hpp) of every task started or resumed since the last call,
  // merged over the workers, which start again from none; nullopt when this scheduler does not
  // record them (--latency off, or a backend that cannot see a task become runnable: docs/latency.md,
  // "Latency"). Call between runs.
  virtual std::optional<LatencyDistribution> take_sched_delays() { return std::nullopt; }

  // ---- executor: called by api.hpp, during run(), from inside a task -----------------------
  // Makes `t` runnable. If t.group is set, the group's pending count already includes it.
  virtual void spawn(Task& t) = 0;
  // Returns once `t` has finished (suspending the calling task if needed).
  virtual void join(Task& t) = 0;
  // Returns once every task of `g` has finished.
  virtual void wait(GroupState& g) = 0;
  // Bracket a call that may block the thread in the kernel (file I/O). The default keeps the
  // worker blocked with its processor, which is the honest behaviour of a design without
  // hand-off.
  virtual void blocking_begin() {}
  virtual void blocking_end() {}
  // Whether join() must be called for a task that has already finished (Task::completion is
  // kDone). False where such a join would return at once, so that the API skips the call.
  bool finished_tasks_need_join() const noexcept { return finished_tasks_need_join_; }

  // ---- waiting for a socket (api.hpp: Socket, wait_readable, wait_writable) ------------------
  // Starts watching `fd`, a non-blocking descriptor, for the task API's waits; called once per
  // descriptor, by a task, before its first wait. nullptr: this scheduler waits in the kernel
  // and needs no registration (the default).
  virtual PollDesc* io_register(int /*fd*/) { return nullptr; }
  // Stops watching a descriptor io_register returned a PollDesc for; called before it is
  // closed, with no task waiting on it.
  virtual void io_unregister(PollDesc& /*desc*/) noexcept {}
  // Returns once `fd` may be ready for `what` (spuriously too: the caller retries its call and
  // waits again on EAGAIN). `desc` is io_register's answer for fd. The default, for a backend
  // without a poller or a descriptor with no PollDesc, waits in the kernel (poll(2)) inside
  // blocking_begin/blocking_end: the thread is held, and steal-half hands its processor on.
  // Throws std::system_error if poll(2) fails.
  virtual void io_wait(int fd, PollDesc* desc, IoWait what);

  // ---- synchronisation (api.hpp: Channel, Mutex, yield, safepoint; sync/) -------------------
  // A channel of `capacity` values (0: unbuffered) of `elem_size` bytes, and a mutex. The
  // defaults are Go's algorithms over park() and ready() (sync/go_channel.hpp, go_mutex.hpp); a
  // backend with channels and mutexes of its own (boost-fiber) overrides them.
  virtual std::unique_ptr<ChannelCore> make_channel(std::size_t capacity, std::size_t elem_size, std::string name);
  virtual std::unique_ptr<MutexCore> make_mutex(std::string name);
  // Parks the calling task on `w`, which the caller has queued on a channel or mutex under that
  // object's lock: calls unlock(lock) once the task can no longer miss a ready(w) (its context
  // saved, its sleep set up), and returns once ready(w) has been called. The default throws
  // std::logic_error: a backend that cannot park a task (openmp, serial) is refused the
  // workloads that wait (SchedulerEntry::cannot_wait) before they run, so only a direct use of
  // the API gets here.
  virtual void park(Waiter& w, void (*unlock)(void*), void* lock);
  // Makes the task parked on `w` runnable again (Go's ready), called by the task that took `w`
  // off its object's queue, after letting the object's lock go (or by the deadlock watch, from
  // outside any task). steal-half puts it in the caller's processor's runnext.
  virtual void ready(Waiter& w);
  // The calling task lets the others run (Go's Gosched: it goes to the back of the global run
  // queue). The default does nothing: there is no queue to go back to (serial, tbb).
  virtual void yield() {}
  // safepoint()'s slow path (safepoint.hpp): the calling task yields if its scheduler's
  // monitor marked its time slice as over (--preempt safepoint). The default does nothing.
  virtual void preempt_point() {}
  // Whether a task that finds a mutex locked may spin a round before it parks (Go's
  // runtime_canSpin: more than one processor, some other one running, nothing queued here).
  virtual bool may_spin(int /*iteration*/) const { return false; }
  // The live channels and mutexes of this scheduler, for the deadlock watch.
  SyncRegistry& sync_registry() noexcept { return sync_registry_; }

 protected:
  // A backend whose join() of a finished task releases something (a thread to reap, a fiber
  // handle) leaves this true; the others clear it in their constructor.
  bool finished_tasks_need_join_ = true;

  // Backend part of run(): run root to completion on this scheduler's threads.
  virtual void run_root(const std::function<void()>& root) = 0;

  // The deadlock watch of a backend whose tasks may wait on channels and mutexes, once it has
  // seen every task asleep with nothing that could wake one: the report naming each parked task
  // and what it waits on (`detail` appended), after which every parked task is readied as
  // abandoned (its operation throws DeadlockError, and the tasks unwind). Returns the report
  // for run_root to throw once the root has finished; "" when no task is parked on a channel or
  // mutex (the stuck tasks wait on something else, which the backend reports itself).
  std::string report_and_abandon_sync_waits(const std::string& header, const std::string& detail);

 private:
  SyncRegistry sync_registry_;
};

namespace detail {
// The scheduler whose run() is active, or nullptr. One run at a time per process: the API's
// free functions (spawn, WaitGroup, blocking) route through it. Inline: every spawn reads it.
inline constinit std::atomic<Scheduler*> g_active_scheduler{nullptr};
inline Scheduler* active_scheduler() noexcept { return g_active_scheduler.load(std::memory_order_acquire); }
// A task failed and nobody joined or waited for it: run() reports it instead of losing it.
void note_unobserved_exception() noexcept;
// Waits in the kernel (poll(2), retried on EINTR) until fd is ready for `what`, or has an error
// or a hang-up (which the caller's next call reports). Throws std::system_error if poll fails.
void wait_in_kernel(int fd, IoWait what);

// Memory for task objects (task_memory.cpp): blocks of kTaskBlockBytes x (class + 1) from a
// per-thread cache. A task type's size is a constant, so its class is computed here, at compile
// time, and the blocks need no header. Sanitizer builds take every task from operator new, so
// that ASan sees each use after free and TSan each allocation.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kPooledTaskMemory = false;
#else
inline constexpr bool kPooledTaskMemory = true;
#endif
inline constexpr std::size_t kTaskBlockBytes = 64;
inline constexpr std::uint32_t kTaskBlockClasses = 8;  // 64 .. 512 bytes; larger tasks use operator new
// A thread's cache of free blocks, one list per class (task_memory.cpp). `room`: how many more
// blocks a list may keep; 0 in a thread that has not freed yet, so its first free goes the slow
// way (free_task_block), which arms the cache.
struct TaskBlockCache {
  void* head[kTaskBlockClasses];
  std::uint32_t room[kTaskBlockClasses];
  bool armed;
};
extern constinit thread_local TaskBlockCache tls_task_blocks;
// Out of line on purpose: a spawn is inlined into task code, which may have switched fibers,
// and so threads, since its last spawn; the compiler may reuse the thread pointer it read
// before the switch, so the cache is reached in a function of its own (docs/platform.md).
void* allocate_task_block(std::uint32_t size_class);
// The slow half of a free: the thread's first, or its list is full.
void free_task_block(void* p, std::uint32_t size_class) noexcept;

template <std::size_t Size>
inline constexpr std::uint32_t kTaskBlockClass = static_cast<std::uint32_t>((Size + kTaskBlockBytes - 1) / kTaskBlockBytes - 1);
template <std::size_t Size>
void* allocate_task_memory() {
  if constexpr (kPooledTaskMemory && kTaskBlockClass<Size> < kTaskBlockClasses) {
    return allocate_task_block(kTaskBlockClass<Size>);
  } else {
    return ::operator new(Size);
  }
}
// Inline, with the thread_local reached directly: called only from a task type's destroy
// function (api.hpp), which is entered through a pointer, never inlined, and switches no
// fiber, so the thread it reads is the thread it runs on.
template <std::size_t Size>
void free_task_memory(void* p) noexcept {
  if constexpr (kPooledTaskMemory && kTaskBlockClass<Size> < kTaskBlockClasses) {
    constexpr std::uint32_t c = kTaskBlockClass<Size>;
    TaskBlockCache& cache = tls_task_blocks;
    if (cache.room[c] != 0) [[likely]] {
      *static_cast<void**>(p) = cache.head[c];
      cache.head[c] = p;
      --cache.room[c];
      return;
    }
    free_task_block(p, c);
  } else {
    ::operator delete(p);
  }
}
}  // namespace detail

}  // namespace schedlab
