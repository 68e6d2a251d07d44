// os-threads: every task is its own OS thread, and a join is a thread join.
//
// The seeds' contrast between OS threads and goroutines, run on the same workloads: what a task
// costs when creating it is a clone(), running it is the kernel's scheduling decision, and
// waiting for it is a futex sleep and a kernel context switch, instead of a few hundred
// nanoseconds of user-space queue work on a pooled fiber. The task API maps onto pthreads the
// obvious way:
//   spawn(f)    pthread_create a thread that runs the task (its record lives in Task::backend);
//   join(h)     pthread_join that thread;
//   WaitGroup   go() creates a thread and adds it to the group's thread list (GroupState::backend);
//               wait() joins every thread on the list until it is empty (a group task that calls
//               go() adds its successor before it finishes, so the list is never empty early);
//   blocking    nothing: a thread that blocks in the kernel is what every task here already is;
//   socket wait poll(2) on the task's own thread (Scheduler::io_wait's default): one thread per
//               waiting connection, the design the network poller exists to avoid;
//   channels,   Go's algorithms (sync/go_channel.hpp, go_mutex.hpp), a parked task's thread
//   mutexes     sleeping on a condition variable of its own (a mutex and a condition variable per
//               wait, in its frame) until the task that takes it off the queue notifies it: each
//               hand-off of a ping-pong wakes one thread in the kernel and puts another to sleep,
//               the seeds' thread switch; a mutex waiter spins only with more than one CPU;
//   yield       sched_yield(2);
//   the root    runs on a thread of its own; run_root joins it from the harness thread, watching
//               for a deadlock meanwhile (every live thread asleep on a channel, a mutex or a
//               join for a second: sync/blocked_watch.hpp).
//
// --threads is NOT a limit on parallelism. Every task is a runnable kernel thread, and the
// kernel decides which run where. What --threads does here: with `pin=on` (the default) every
// task thread, the root's included, is created with its CPU affinity set to the first `threads`
// CPUs this process may run on (pthread_attr_setaffinity_np), so threads=1 means one core and
// threads=2 two cores, the same hardware the other schedulers get at that setting. With more
// --threads than allowed CPUs, all allowed CPUs are used. This is cpu_pin.hpp's rule for threads
// that are not workers: there are no long-lived workers to bind one to a CPU each, since a
// thread lives for one task. With `pin=off` the threads inherit the harness thread's affinity
// and --threads only labels the rows. Unlike the worker-pool backends, on is the default here:
// off would let threads=1 use every core.
//
// Resources, and the max-live-threads limit. A thread holds a kernel task (a pid out of
// kernel.pid_max, 32768 on the project machine, shared with every process), a kernel stack
// (16 KiB) and its user stack mapping (two VMAs with the guard page, out of vm.max_map_count's
// 65530) until it is joined; RLIMIT_NPROC counts it too, for non-root users. A program that
// spawns a deep or wide tree would otherwise fail somewhere inside clone() or mmap() with EAGAIN,
// or make the whole machine unable to fork. So spawn() counts threads started and not yet joined
// (the root included) and refuses past `max-live-threads` with a std::runtime_error that says
// so; pthread_create failing (EAGAIN, ENOMEM: the std::system_error std::thread would throw)
// becomes a std::runtime_error with the same advice. The default, 10000, sits at a third of the
// project machine's pid_max and well inside max_map_count/2, and costs about 10000 x (16 KiB
// kernel stack + ~12 KiB touched user stack + the thread's bookkeeping) ~ 0.4 GB; it admits the
// whole of fib-go n=20 (13528 tasks; 1.7k-5.2k of them were alive at once in our runs at 1 and
// 2 threads) and the 2000-deep join chain of the conformance tests. fib-go at its default n=27 (392834 tasks) may
// well exceed it: use --cutoff or a smaller --n.
//
// Task stacks are pthread stacks of `stack-size` bytes (default 64K, the fibers' default);
// glibc places the thread's static TLS and its descriptor (~2-3 KiB) inside that, and with
// `stack-guard=on` adds one PROT_NONE guard page below it (pthread_attr_setguardsize). Each is
// TaskThreadGuard::kAltStackBytes (32 KiB) larger for the alternate signal stack the thread's
// first frame holds, on which a task's stack overflow is reported (runtime/fiber_guard.hpp: the
// case, the stack and the --stack-size that fixes it) instead of killing the process; those
// pages are touched only by a signal, and arming costs three sigaltstack calls per thread (is
// there one already, as AddressSanitizer gives every thread; set; disable at the end) and no
// mapping: under a microsecond, against tens for the thread itself.
//
// A WaitGroup's threads that have finished but nobody joined yet keep their stacks mapped, so a
// group of 10^5 short tasks would run out of mappings long before its wait(). go() therefore
// sweeps the group's list (joins the threads that have finished) whenever it has doubled since
// the last sweep. At the limit, the group's owner (the thread that started it) waits for the
// group's oldest thread to finish before it starts another (a flat fan-out of 10^6 tasks runs,
// at most max-live-threads at a time); an owner with no thread of its own left (a tree's inner
// node whose siblings' subtrees hold every slot: skynet 10^4 is 11,111 tasks) waits for another
// thread to be joined, and is refused only when none is for kLimitPatience (every live thread
// waits: the limit is too low for the tree). A group member spawning into its own group, or a
// spawn() for a handle, is refused at the limit.
//
// Exceptions: TaskWith::invoke_body stores a task's exception in its result slot or its group,
// exactly as under the other schedulers, and the root's is rethrown by run_root. When spawn()
// itself throws (limit, pthread_create), api.hpp neither frees the task nor returns a handle, so
// spawn() frees it and takes it back out of its group's pending count before throwing.
//
// Counters. Measured: tasks_spawned, tasks_executed, threads_created (one per task, the root
// included), peak_live_tasks (exact: one shared atomic is noise next to a clone()), suspensions
// (joins and waits that found their task or group unfinished and slept in pthread_join, and
// parks), the channel and mutex parks and readies, yields.
// Structurally zero, measured as 0: the queue, steal and overflow counters (the backend has no
// queues of its own), fiber_switches, spinning_ns, handoffs, retakes, sysmon_wakeups and
// sysmon_cpu_ns (no processors to hand over, no monitor), stacks_allocated (no fiber stacks),
// the netpoll counters (no poller: a task waiting for a socket blocks its thread in poll(2)),
// ready_runnext and ready_runnext_stolen (no run queue). Not measured: migrations, parks,
// unparks, idle_ns and preemptions, which are the kernel's doing here and not visible to the
// backend (perf stat -e cpu-migrations,context-switches sees them; the rusage columns too).
// worker_tids() is empty: no thread lives longer than its task.
#include "os_threads.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "../cpu_pin.hpp"
#include "../runtime/fiber_guard.hpp"
#include "../stats.hpp"
#include "../sync/blocked_watch.hpp"

namespace schedlab {
namespace {

class OsThreadsScheduler;

// One task thread. Owned by the task's JoinHandle side (Task::backend) or by its group's list,
// and freed by whoever joins the thread.
struct ThreadRecord {
  OsThreadsScheduler* sched = nullptr;
  Task* task = nullptr;                         // null for the root
  const std::function<void()>* root = nullptr;  // the root only
  std::exception_ptr root_error;                // the root only
  pthread_t thread{};
  // Group tasks: set as the thread's last action, so a sweep may join it without waiting long.
  std::atomic<bool> finished{false};
};

// Where a parked task's thread sleeps (park, ready).
struct ThreadSleep {
  std::mutex mutex;
  std::condition_variable cv;
  bool woken = false;  // guarded by mutex
};

// GroupState::backend: the threads of one WaitGroup not yet joined.
struct GroupThreads {
  static constexpr std::size_t kSweepMin = 64;
  explicit GroupThreads(pthread_t creator) : owner(creator) {}
  // The thread that spawned the group's first task: the only spawner that may wait for the
  // group's threads at the limit (a member could pick itself, or a member waiting for it).
  const pthread_t owner;
  std::mutex mutex;
  std::vector<ThreadRecord*> records;
  std::size_t sweep_at = kSweepMin;
};

[[noreturn]] void die(const char* what, int rc) {
  std::fprintf(stderr, "os-threads: %s failed: %s\n", what, std::strerror(rc));
  std::abort();
}

class OsThreadsScheduler final : public Scheduler {
 public:
  explicit OsThreadsScheduler(const OsThreadsConfig& config) : config_(config) {
    if (config_.max_live_threads < 1) {
      throw std::invalid_argument("os-threads: --max-live-threads must be at least 1 (the root)");
    }
    const auto refused = [this](const char* why) {
      return std::invalid_argument("os-threads: --stack-size " + std::to_string(config_.stack_size) + " refused by " +
                                   why + "; use at least " + std::to_string(PTHREAD_STACK_MIN));
    };
    // What pthread_attr_setstacksize would refuse, checked on the size the task gets.
    if (config_.stack_size < static_cast<std::size_t>(PTHREAD_STACK_MIN)) throw refused("PTHREAD_STACK_MIN");
    if (int rc = pthread_attr_init(&attr_); rc != 0) die("pthread_attr_init", rc);
    // The task thread's first frame holds its alternate signal stack (TaskThreadGuard), so the
    // task keeps --stack-size below it.
    if (int rc = pthread_attr_setstacksize(&attr_, config_.stack_size + TaskThreadGuard::kAltStackBytes); rc != 0) {
      pthread_attr_destroy(&attr_);
      throw refused((std::string("pthread_attr_setstacksize (") + std::strerror(rc) + ")").c_str());
    }
    const long page = ::sysconf(_SC_PAGESIZE);
    pthread_attr_setguardsize(&attr_, config_.stack_guard ? static_cast<std::size_t>(page) : 0);
    if (config_.pin) {
      const cpu_set_t use = pinned_cpus(allowed_cpus(), kAnyWorker, config_.threads);
      if (int rc = pthread_attr_setaffinity_np(&attr_, sizeof use, &use); rc != 0) {
        die("pthread_attr_setaffinity_np", rc);
      }
    }
  }
  ~OsThreadsScheduler() override { pthread_attr_destroy(&attr_); }

  unsigned threads() const override { return config_.threads; }
  std::vector<pid_t> worker_tids() const override { return {}; }

  CounterSet counters() const override {
    CounterSet c;
    for (Counter k : {Counter::local_pushes, Counter::local_pops, Counter::steal_attempts,
                      Counter::steals, Counter::tasks_stolen, Counter::global_pushes,
                      Counter::global_pops, Counter::overflows, Counter::fiber_switches,
                      Counter::spinning_ns, Counter::handoffs, Counter::retakes, Counter::sysmon_wakeups,
                      Counter::sysmon_cpu_ns, Counter::stacks_allocated, Counter::netpoll_readied,
                      Counter::netpoll_polls, Counter::netpoll_blocked_ns, Counter::ready_runnext,
                      Counter::ready_runnext_stolen}) {
      c.set(k, 0);
    }
    for (Counter k : {Counter::chan_parks, Counter::chan_readies, Counter::lock_parks, Counter::lock_readies,
                      Counter::yields}) {
      c.set(k, sync_counts_[static_cast<std::size_t>(k) - static_cast<std::size_t>(Counter::chan_parks)].load(
                   std::memory_order_relaxed));
    }
    c.set(Counter::tasks_spawned, spawned_.load(std::memory_order_relaxed));
    c.set(Counter::tasks_executed, executed_.load(std::memory_order_relaxed));
    c.set(Counter::threads_created, threads_created_.load(std::memory_order_relaxed));
    c.set(Counter::peak_live_tasks, static_cast<std::uint64_t>(std::max<std::int64_t>(
                                        0, peak_.load(std::memory_order_relaxed))));
    c.set(Counter::suspensions, suspensions_.load(std::memory_order_relaxed) + parks());
    return c;
  }

  // A parked task's thread sleeps on a condition variable of its own, in its frame (below);
  // ready() notifies it under its mutex, since the sleeper may return, and its frame go, at once.
  void park(Waiter& w, void (*unlock)(void*), void* lock) override {
    ThreadSleep sleep;
    w.backend = &sleep;
    count(w.kind == WaitKind::lock ? Counter::lock_parks : Counter::chan_parks);
    watch_.block();
    std::unique_lock hold(sleep.mutex);
    unlock(lock);  // a ready() from now on finds the sleep ready to be notified
    sleep.cv.wait(hold, [&sleep] { return sleep.woken; });
  }
  void ready(Waiter& w) override {
    count(w.kind == WaitKind::lock ? Counter::lock_readies : Counter::chan_readies);
    watch_.unblock();
    auto* sleep = static_cast<ThreadSleep*>(w.backend);
    std::lock_guard hold(sleep->mutex);
    sleep->woken = true;
    sleep->cv.notify_one();
  }
  void yield() override {
    count(Counter::yields);
    sched_yield();
  }
  // Go's active_spin rounds, when another CPU may run the holder.
  bool may_spin(int iteration) const override { return iteration < 4 && config_.threads > 1; }

  void spawn(Task& t) override {
    auto* rec = new ThreadRecord;
    rec->sched = this;
    rec->task = &t;
    GroupState* g = t.group;
    try {
      if (g == nullptr) {
        start(*rec, &task_main);
        t.backend = rec;
        return;
      }
      // No other thread can be creating the list: group tasks exist only once it exists, and
      // wait() removes it only after joining them all.
      if (g->backend == nullptr) g->backend = new GroupThreads(pthread_self());
      auto& gt = *static_cast<GroupThreads*>(g->backend);
      std::unique_lock lock(gt.mutex);
      if (gt.records.size() >= gt.sweep_at || at_limit()) sweep(gt);
      // At the limit with none of the group's threads finished, the group's owner waits for
      // the oldest one, as its wait() would have, rather than refuse: the group's threads never
      // wait for their parent, so this only delays it. Any other spawner is refused. The slot
      // is reserved before the thread starts (reserve_thread), never checked first and counted
      // after: owners spawning at once each saw room for one more, and all but one were refused
      // (CI: ten groups of 10^4 tasks at 2 threads). The join is not under the lock: the thread
      // joined may itself be spawning into this group.
      const bool may_wait = pthread_equal(gt.owner, pthread_self()) != 0;
      gt.records.reserve(gt.records.size() + 1);  // before the slot: nothing throws once it is ours
      while (!reserve_thread()) {
        if (!may_wait) throw limit_error();
        if (gt.records.empty()) {
          lock.unlock();
          const bool joined = wait_for_a_join();
          lock.lock();
          if (!joined) throw limit_error();
          continue;
        }
        ThreadRecord* oldest = gt.records.front();
        gt.records.erase(gt.records.begin());
        lock.unlock();
        if (!oldest->finished.load(std::memory_order_acquire))
          suspensions_.fetch_add(1, std::memory_order_relaxed);
        join_thread(*oldest);
        delete oldest;
        lock.lock();
      }
      start_reserved(*rec, &task_main);
      gt.records.push_back(rec);  // cannot throw: reserved above (erasing keeps the capacity)
    } catch (...) {
      delete rec;
      // api.hpp frees nothing when spawn throws (see the top of this file).
      if (g != nullptr) g->pending.fetch_sub(1, std::memory_order_acq_rel);
      t.destroy(t);
      throw;
    }
  }

  void join(Task& t) override {
    auto* rec = static_cast<ThreadRecord*>(t.backend);
    if (t.completion.load(std::memory_order_acquire) != Task::kDone) {
      suspensions_.fetch_add(1, std::memory_order_relaxed);
    }
    const BlockedWhile blocked(watch_);
    join_thread(*rec);
    delete rec;
    t.backend = nullptr;
  }

  void wait(GroupState& g) override {
    if (auto* gt = static_cast<GroupThreads*>(g.backend)) {
      const BlockedWhile blocked(watch_);
      bool slept = false;
      for (;;) {
        ThreadRecord* rec;
        {
          std::lock_guard lock(gt->mutex);
          if (gt->records.empty()) break;
          rec = gt->records.back();
          gt->records.pop_back();
        }
        if (!slept && !rec->finished.load(std::memory_order_acquire)) {
          slept = true;
          suspensions_.fetch_add(1, std::memory_order_relaxed);
        }
        join_thread(*rec);
        delete rec;
      }
      delete gt;
      g.backend = nullptr;
    }
    g.pending.store(0, std::memory_order_relaxed);
  }

 protected:
  void run_root(const std::function<void()>& root) override {
    peak_.store(running_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    ThreadRecord rec;
    rec.sched = this;
    rec.root = &root;
    start(rec, &root_main);
    // Joins the root, watching for a deadlock every 100 ms meanwhile: every live thread asleep
    // on a channel, a mutex or a join, and nothing readied, for a second. Its parked waits are
    // then abandoned (each throws DeadlockError in its thread), the threads unwind, and the
    // report is thrown once the root is joined.
    std::string deadlock;
    std::uint64_t abandoned_at = 0;
    watch_.reset();
    for (;;) {
      timespec deadline{};
      ::clock_gettime(CLOCK_REALTIME, &deadline);
      deadline.tv_nsec += 100'000'000;
      if (deadline.tv_nsec >= 1'000'000'000) {
        deadline.tv_nsec -= 1'000'000'000;
        ++deadline.tv_sec;
      }
      const int rc = pthread_timedjoin_np(rec.thread, nullptr, &deadline);
      if (rc == 0) break;
      if (rc != ETIMEDOUT) die("pthread_timedjoin_np", rc);
      if (deadlock.empty() && watch_.stuck(running_.load(std::memory_order_seq_cst), now_ns())) {
        deadlock = report_and_abandon_sync_waits(
            "deadlock: all " + std::to_string(running_.load()) + " live task threads have slept for " +
                std::to_string(BlockedWatch::kDeadlockAfterNs / 1'000'000) + " ms on channels, mutexes and joins",
            "");
        abandoned_at = now_ns();
      }
      if (abandoned_at != 0 && now_ns() - abandoned_at > kUnwindPatienceNs) {
        // The abandoned tasks did not unwind: something else holds them. The root thread, which
        // nothing will wake, is left behind (it touches `rec` only when it ends).
        pthread_detach(rec.thread);
        throw DeadlockError(deadlock + "\n  (the threads did not unwind within 10 s; this scheduler cannot run again)");
      }
    }
    live_threads_.fetch_sub(1, std::memory_order_relaxed);
    if (!deadlock.empty()) throw DeadlockError(deadlock);
    if (rec.root_error) std::rethrow_exception(rec.root_error);
  }

 private:
  // Counts one more live thread if the limit allows it. True when counted: the caller then
  // starts the thread (start_reserved) or gives the slot back.
  bool reserve_thread() {
    std::uint64_t live = live_threads_.load(std::memory_order_relaxed);
    while (live < config_.max_live_threads) {
      if (live_threads_.compare_exchange_weak(live, live + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  std::runtime_error limit_error() const {
    const std::string n = std::to_string(config_.max_live_threads);
    return std::runtime_error("os-threads: " + n + " live threads reached (--max-live-threads " + n +
                              "); raise it or use a smaller workload (e.g. --cutoff)");
  }

  // Starts a thread running entry(&rec), counting it as a task and a live thread. Throws
  // std::runtime_error past max-live-threads or when the kernel refuses the thread.
  void start(ThreadRecord& rec, void* (*entry)(void*)) {
    if (!reserve_thread()) throw limit_error();
    start_reserved(rec, entry);
  }

  // start() for a caller that has reserved the thread's slot (reserve_thread); gives the slot
  // back when the kernel refuses the thread.
  void start_reserved(ThreadRecord& rec, void* (*entry)(void*)) {
    const std::uint64_t live = live_threads_.load(std::memory_order_relaxed) - 1;
    const std::int64_t running = running_.fetch_add(1, std::memory_order_relaxed) + 1;
    std::int64_t peak = peak_.load(std::memory_order_relaxed);
    while (running > peak &&
           !peak_.compare_exchange_weak(peak, running, std::memory_order_relaxed)) {
    }
    if (int rc = pthread_create(&rec.thread, &attr_, entry, &rec); rc != 0) {
      running_.fetch_sub(1, std::memory_order_relaxed);
      live_threads_.fetch_sub(1, std::memory_order_relaxed);
      throw std::runtime_error(
          "os-threads: could not start a thread with " + std::to_string(live) +
          " live threads: " + std::strerror(rc) +
          " (a system limit: kernel.pid_max, kernel.threads-max, RLIMIT_NPROC, vm.max_map_count "
          "or memory); lower --max-live-threads below " + std::to_string(live) +
          " or use a smaller workload (e.g. --cutoff)");
    }
    spawned_.fetch_add(1, std::memory_order_relaxed);
    threads_created_.fetch_add(1, std::memory_order_relaxed);
  }

  void join_thread(ThreadRecord& rec) {
    if (int rc = pthread_join(rec.thread, nullptr); rc != 0) die("pthread_join", rc);
    live_threads_.fetch_sub(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(join_mutex_);
      ++joins_;
    }
    join_cv_.notify_all();
  }

  // How long the root may take to unwind once a deadlock's waits are abandoned (each abandoned
  // wait throws at once).
  static constexpr std::uint64_t kUnwindPatienceNs = 10'000'000'000;

  // How long an owner at the limit with no thread of its own waits for any thread to be joined
  // before it gives up: a second with no join anywhere means every live thread is waiting (for
  // children that need a slot), not that the machine is slow (a join takes microseconds).
  static constexpr std::chrono::seconds kLimitPatience{1};

  // Waits until some thread is joined (a slot may be free). False after kLimitPatience without
  // one.
  bool wait_for_a_join() {
    std::unique_lock lock(join_mutex_);
    const std::uint64_t seen = joins_;
    return join_cv_.wait_for(lock, kLimitPatience, [&] { return joins_ != seen; });
  }

  bool at_limit() const {
    return live_threads_.load(std::memory_order_relaxed) >= config_.max_live_threads;
  }

  // Joins and frees the group's threads that have finished. Called with gt.mutex held.
  void sweep(GroupThreads& gt) {
    auto still = std::stable_partition(gt.records.begin(), gt.records.end(), [](ThreadRecord* r) {
      return !r->finished.load(std::memory_order_acquire);
    });
    for (auto it = still; it != gt.records.end(); ++it) {
      join_thread(**it);
      delete *it;
    }
    gt.records.erase(still, gt.records.end());
    gt.sweep_at = std::max(GroupThreads::kSweepMin, 2 * gt.records.size());
  }

  void task_finished() {
    executed_.fetch_add(1, std::memory_order_relaxed);
    running_.fetch_sub(1, std::memory_order_seq_cst);
    watch_.progress();
  }

  void count(Counter k) noexcept {
    sync_counts_[static_cast<std::size_t>(k) - static_cast<std::size_t>(Counter::chan_parks)].fetch_add(
        1, std::memory_order_relaxed);
  }
  std::uint64_t parks() const noexcept {
    return sync_counts_[0].load(std::memory_order_relaxed) + sync_counts_[2].load(std::memory_order_relaxed);
  }
  // A task blocked in a join or a wait group's wait, for the deadlock watch.
  struct BlockedWhile {
    explicit BlockedWhile(BlockedWatch& w) : watch(w) { watch.block(); }
    ~BlockedWhile() { watch.unblock(); }
    BlockedWatch& watch;
  };

  static void* task_main(void* arg) {
    auto& rec = *static_cast<ThreadRecord*>(arg);
    OsThreadsScheduler& s = *rec.sched;
    TaskThreadGuard guard(s.config_.stack_size);
    Task& t = *rec.task;
    t.run_body();
    s.task_finished();
    if (GroupState* g = t.group) {
      t.destroy(t);
      g->pending.fetch_sub(1, std::memory_order_acq_rel);
      rec.finished.store(true, std::memory_order_release);  // last touch: rec may be freed
    } else {
      t.completion.store(Task::kDone, std::memory_order_release);  // last touch of t
    }
    return nullptr;
  }

  static void* root_main(void* arg) {
    auto& rec = *static_cast<ThreadRecord*>(arg);
    TaskThreadGuard guard(rec.sched->config_.stack_size);
    try {
      (*rec.root)();
    } catch (...) {
      rec.root_error = std::current_exception();
    }
    rec.sched->task_finished();
    return nullptr;
  }

  const OsThreadsConfig config_;
  pthread_attr_t attr_;  // stack size, guard and CPUs (pin) of every task thread

  std::atomic<std::uint64_t> live_threads_{0};  // started, not yet joined (the limit)
  std::mutex join_mutex_;                        // guards joins_
  std::condition_variable join_cv_;              // notified at every join (wait_for_a_join)
  std::uint64_t joins_ = 0;                      // threads joined so far
  std::atomic<std::int64_t> running_{0};        // started, body not finished (live tasks)
  std::atomic<std::int64_t> peak_{0};
  std::atomic<std::uint64_t> spawned_{0};
  std::atomic<std::uint64_t> executed_{0};
  std::atomic<std::uint64_t> threads_created_{0};
  std::atomic<std::uint64_t> suspensions_{0};
  // chan_parks, chan_readies, lock_parks, lock_readies, ready_runnext, ready_runnext_stolen,
  // yields: the counters from chan_parks on, in Counter's order (count()); the runnext pair
  // stays 0.
  std::atomic<std::uint64_t> sync_counts_[7]{};
  static_assert(static_cast<std::size_t>(Counter::yields) - static_cast<std::size_t>(Counter::chan_parks) == 6);
  BlockedWatch watch_;  // tasks blocked on channels, mutexes, joins and waits
};

}  // namespace

std::unique_ptr<Scheduler> make_os_threads(const OsThreadsConfig& config) {
  return std::make_unique<OsThreadsScheduler>(config);
}

}  // namespace schedlab
