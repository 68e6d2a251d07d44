// tbb: the oneTBB baseline.
//
// oneTBB is a mature work-stealing runtime (per-thread task pools, random stealing, the calling
// thread helps while it waits), so it is the yardstick for steal-half's per-task cost. The task
// API maps onto it the way idiomatic TBB code is written, so the baseline is not handicapped:
//   spawn(f)    run(f) on the spawning task's own tbb::task_group, which lives on that task's
//               stack frame and is created at its first spawn (one group per parent, as in
//               `task_group g; g.run(...); ...; g.wait();`);
//   join(h)     if h's task has not finished: wait() on that group, during which the joining
//               thread runs other tasks (TBB's blocking-style wait: no stack switch, the waiter's
//               stack grows instead). It also waits for siblings spawned before h, as g.wait()
//               does; with schedlab's structured API a sibling never waits for its parent, so
//               this only ever waits longer, never forever. A handle must be joined by the task
//               that spawned it (TBB waits on a group from its owner). A handle whose task has
//               finished needs no wait, and the task's end waits only if it spawned since the
//               last wait, so `spawn, spawn, join, join` costs one wait, as `run, run, wait` does
//               (schedlab_gbench's raw:tbb-task-group rows are that reference);
//   WaitGroup   one tbb::task_group; go() is run(), wait() is wait();
//   blocking    nothing: TBB has no notion of a blocking call, the thread just blocks.
//   channels,   Go's algorithms (sync/go_channel.hpp, go_mutex.hpp) over oneTBB's resumable tasks
//   mutexes     (__TBB_RESUMABLE_TASKS, on in Debian's oneTBB 2021.8): a task that must wait calls
//               tbb::task::suspend, which switches its thread to another stack (a coroutine of
//               TBB's) that goes on running tasks, and the task that readies it calls
//               tbb::task::resume, which queues it to continue on whichever arena thread takes it
//               (a task on a thread's own stack, the root's for one, resumes only on that
//               thread). Measured here: a ping-pong round trip through suspend and resume costs
//               4-7 µs (a coroutine switch and an enqueue per hand-off). A task may thus end on
//               another thread than it started on, so the per-thread state below is read again
//               after every wait (a join, a wait group, a park): see Frame;
//   yield       nothing (the default): oneTBB has no way for a task to go back to the queue;
//   socket wait poll(2) on the thread (Scheduler::io_wait's default): TBB has no poller, and a
//               thread waiting for a socket is one arena slot fewer, as in a TBB program.
// The arena has exactly --threads slots, a root thread of the scheduler's own taking one of them,
// so TBB runs on the same number of threads as every other scheduler. The root thread exists for
// its stack (thread_stack.hpp): a wait runs other tasks nested on the waiting thread's stack, so
// a deep tree (UTS T3L) needs a deeper stack than the harness thread has. Every thread that runs
// tasks has --thread-stack: the root thread is created with it, and oneTBB's worker threads get
// it from a tbb::global_control(thread_stack_size), which oneTBB reads once, when it creates its
// process-wide thread pool (its "market", at the first arena): so the schedulers alive at once in
// a process must agree on it (WorkerStack below), and a scheduler checks that its workers have
// the stack it asked for (a pool started earlier, by other TBB code in the process, would not).
// Handing each run to the root thread and back costs two thread wake-ups per run, as openmp's
// master thread does (root_handoff.hpp): about 7 us a run here (schedlab_gbench, fib-go n=2,
// against 0.05 us for raw:tbb-task-group, whose calling thread joins the arena itself). A thread that enters the arena is armed
// for a stack overflow (runtime/fiber_guard.hpp), which is reported with the --thread-stack that
// fixes it instead of killing the process. With --pin on, a task_scheduler_observer
// binds each thread that enters the arena to the CPU of its slot (slot i on the i-th allowed
// CPU, cpu_pin.hpp) and gives it its previous mask back when it leaves: TBB's worker threads
// are one process-wide pool that serves every arena, pinned or not. Entering and leaving happen
// during a run, so the two sched_setaffinity calls per thread fall in the measured region.
//
// What we can count: tasks spawned and executed, and migrations (a task run by an arena slot
// other than its spawner's). TBB does not expose its steals, queue traffic or parking, so those
// counters are reported as not measured.
#include "tbb.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/task_scheduler_observer.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include <oneapi/tbb/task.h>

#include "../cpu_pin.hpp"
#include "../root_handoff.hpp"
#include "../runtime/fiber_guard.hpp"
#include "../stats.hpp"
#include "../sync/blocked_watch.hpp"
#include "../thread_stack.hpp"

#if !__TBB_RESUMABLE_TASKS
#error "schedlab's tbb backend parks tasks with oneTBB's resumable tasks (tbb::task::suspend), which this oneTBB lacks"
#endif

namespace schedlab {
namespace {

// oneTBB caps every arena with one process-wide max_allowed_parallelism, and when several
// global_control objects exist the smallest wins. So the limit is owned here, once, and kept at
// the largest arena alive: several TbbSchedulers with different thread counts can coexist (the
// harness interleaves repetitions across schedulers).
class ParallelismLimit {
 public:
  static void add(unsigned threads) { instance().change(threads, +1); }
  static void remove(unsigned threads) { instance().change(threads, -1); }

 private:
  static ParallelismLimit& instance() {
    static ParallelismLimit limit;
    return limit;
  }
  void change(unsigned threads, int delta) {
    std::lock_guard lock(mutex_);
    if (delta > 0) {
      live_.insert(threads);
    } else {
      live_.erase(live_.find(threads));
    }
    const unsigned want = live_.empty() ? 0 : *live_.rbegin();
    if (want == current_) return;
    control_.reset();
    if (want != 0) {
      control_ = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, want);
    }
    current_ = want;
  }

  std::mutex mutex_;
  std::multiset<unsigned> live_;
  unsigned current_ = 0;
  std::unique_ptr<tbb::global_control> control_;
};

// oneTBB's worker threads have one stack size per process, read from global_control when its
// thread pool is created. The first scheduler alive sets it; the others alive at the same time
// must ask for the same size (a sweep over --thread-stack runs each size in a run of its own).
class WorkerStack {
 public:
  // Throws ResourceError when schedulers with another size are alive.
  static void add(std::size_t bytes) { instance().change(bytes, +1); }
  static void remove(std::size_t bytes) { instance().change(bytes, -1); }

 private:
  static WorkerStack& instance() {
    static WorkerStack stack;
    return stack;
  }
  void change(std::size_t bytes, int delta) {
    std::lock_guard lock(mutex_);
    if (delta < 0) {
      --users_;  // the control stays: a pool created later still gets the last size asked
      return;
    }
    if (users_ != 0 && bytes != bytes_) {
      throw ResourceError("--thread-stack " + stack_size_word(bytes) + ": a tbb scheduler with --thread-stack " +
                          stack_size_word(bytes_) +
                          " is alive, and oneTBB gives all its worker threads one stack size; run each --thread-stack "
                          "value in a schedlab run of its own");
    }
    if (!control_ || bytes != bytes_) {
      control_.reset();
      control_ = std::make_unique<tbb::global_control>(tbb::global_control::thread_stack_size, bytes);
      bytes_ = bytes;
    }
    ++users_;
  }

  std::mutex mutex_;
  unsigned users_ = 0;
  std::size_t bytes_ = 0;
  std::unique_ptr<tbb::global_control> control_;
};

class TbbScheduler final : public Scheduler {
 public:
  TbbScheduler(unsigned threads, bool pin, std::size_t thread_stack)
      : threads_(threads),
        pin_(pin),
        thread_stack_(thread_stack),
        pin_cpus_(pin ? allowed_cpus() : std::vector<int>{}),
        limit_(threads),
        stack_(thread_stack),
        arena_(static_cast<int>(threads)),
        slots_(threads),
        observer_(*this) {
    arena_.initialize();
    observer_.observe(true);
    try {
      root_thread_.emplace(thread_stack_, [this] { root_thread_main(); }, "(tbb's root thread)");
    } catch (...) {
      observer_.observe(false);
      throw;
    }
  }
  // libtbb frees an observer's internal record lazily, from a worker thread; if the process
  // ends first LeakSanitizer reports those 40 bytes (tests/sanitizers/lsan.supp).
  ~TbbScheduler() override {
    handoff_.stop();
    root_thread_.reset();  // joins
    observer_.observe(false);
  }

  unsigned threads() const override { return threads_; }

  std::vector<pid_t> worker_tids() const override {
    std::lock_guard lock(tids_mutex_);
    return {tids_.begin(), tids_.end()};
  }

  CounterSet counters() const override {
    CounterSet c;
    for (const WorkerStats& s : slots_) {
      for (Counter k : {Counter::tasks_spawned, Counter::tasks_executed, Counter::migrations}) {
        c[k] += s.get(k);
      }
    }
    c.set(Counter::tasks_spawned, c[Counter::tasks_spawned]);
    c.set(Counter::tasks_executed, c[Counter::tasks_executed]);
    c.set(Counter::migrations, c[Counter::migrations]);
    c.set(Counter::threads_created, threads_);
    for (std::size_t i = 0; i < sync_counts_.size(); ++i) {
      c.set(static_cast<Counter>(static_cast<std::size_t>(Counter::chan_parks) + i),
            sync_counts_[i].load(std::memory_order_relaxed));
    }
    return c;
  }

  // Parks the calling task with oneTBB's resumable tasks: its thread goes on to other tasks on
  // another stack, and ready() resumes the task, on whichever arena thread takes it up.
  void park(Waiter& w, void (*unlock)(void*), void* lock) override {
    count(w.kind == WaitKind::lock ? Counter::lock_parks : Counter::chan_parks);
    watch_.block();
    Frame* const mine = frame_top();
    tbb::task::suspend([&w, unlock, lock](tbb::task::suspend_point sp) {
      w.backend = sp;
      unlock(lock);  // a ready() from now on finds the suspend point
    });
    frame_top() = mine;  // perhaps another thread: it runs this task's frame now
  }
  void ready(Waiter& w) override {
    count(w.kind == WaitKind::lock ? Counter::lock_readies : Counter::chan_readies);
    watch_.unblock();
    tbb::task::resume(static_cast<tbb::task::suspend_point>(w.backend));
  }
  bool may_spin(int iteration) const override { return iteration < 4 && threads_ > 1; }

  void spawn(Task& t) override {
    const unsigned slot = current_slot();
    slots_[slot].add(Counter::tasks_spawned);
    t.spawned_on = slot;
    tbb::task_group* group;
    if (t.group != nullptr) {
      if (t.group->backend == nullptr) t.group->backend = new tbb::task_group;
      group = static_cast<tbb::task_group*>(t.group->backend);
    } else {
      Frame* frame = current_frame;
      if (!frame->group) frame->group.emplace();
      group = &*frame->group;
      frame->unwaited = true;
      t.backend = group;
    }
    group->run([this, &t] { execute(t); });
  }

  void join(Task& t) override {
    if (t.completion.load(std::memory_order_acquire) == Task::kDone) return;
    Frame* frame = frame_top();
    if (frame == nullptr || !frame->group || &*frame->group != t.backend) {
      throw std::logic_error(
          "under the tbb scheduler a JoinHandle must be joined by the task that spawned it");
    }
    {
      const Blocked blocked(watch_);
      frame->group->wait();
    }
    frame_top() = frame;  // a task it ran meanwhile may have parked and ended elsewhere
    frame->unwaited = false;
  }

  void wait(GroupState& g) override {
    auto* group = static_cast<tbb::task_group*>(g.backend);
    if (group == nullptr) return;
    Frame* const frame = frame_top();
    {
      const Blocked blocked(watch_);
      group->wait();
    }
    frame_top() = frame;
    delete group;
    g.backend = nullptr;
    g.pending.store(0, std::memory_order_relaxed);
  }

 protected:
  void run_root(const std::function<void()>& root) override {
    // The root's waits are watched for a deadlock (sync/blocked_watch.hpp): every live task
    // blocked on a channel, a mutex or a join for a second with nothing readied. Its parked
    // waits are then abandoned (each throws DeadlockError), the tasks unwind, and the report is
    // thrown once the root has.
    std::string deadlock;
    watch_.reset();
    try {
      handoff_.run(root, [this, &deadlock] {
        if (deadlock.empty() && watch_.stuck(live_tasks(), now_ns())) {
          deadlock = report_and_abandon_sync_waits(
              "deadlock: all " + std::to_string(live_tasks()) + " live tasks have been blocked for " +
                  std::to_string(BlockedWatch::kDeadlockAfterNs / 1'000'000) + " ms on channels, mutexes and joins",
              "");
        }
      });
    } catch (...) {
      if (deadlock.empty()) throw;
    }
    if (!deadlock.empty()) throw DeadlockError(deadlock);
    if (const std::size_t got = short_stack_.load(std::memory_order_relaxed); got != 0) {
      throw ResourceError("oneTBB's worker threads have " + stack_size_word(got) + " stacks, not the --thread-stack " +
                          stack_size_word(thread_stack_) +
                          ": their pool was started before this scheduler (by other oneTBB code in this process), and "
                          "oneTBB sets its workers' stack size once; run tbb in a process of its own");
    }
  }

 private:
  // The root thread: runs each root in the arena, on a stack of --thread-stack.
  void root_thread_main() noexcept {
    (void)guard_task_thread(ThreadStackFix::thread_stack_option);
    handoff_.serve([this](const std::function<void()>& root) { run_in_arena(root); });
  }

  void run_in_arena(const std::function<void()>& root) {
    bool pinned_here = false;
    arena_.execute([&] {
      current_slot_cache = slot_from_tbb();
      pinned_here = pin_ && !arena_pin;  // the root thread, if the observer did not see it enter
      if (pinned_here) pin_to_slot();
      const unsigned slot = current_slot();
      slots_[slot].add(Counter::tasks_spawned);
      // Counted on every exit: a root that throws has been executed too. (The root runs on
      // this thread's own stack, which oneTBB resumes only on this thread.)
      struct CountExecuted {
        WorkerStats& stats;
        ~CountExecuted() { stats.add(Counter::tasks_executed); }
      } count{slots_[slot]};
      Frame frame(watch_);
      root();
    });
    if (pinned_here) arena_pin.reset();
    if (const int err = pin_error_.load(std::memory_order_relaxed); err != 0) {
      throw ResourceError(pin_refused("a tbb arena thread", err));
    }
  }

  // Records the kernel thread id of every thread that joins the arena, arms it for a stack
  // overflow (and notes a worker whose stack is smaller than asked), and pins it (--pin on) until
  // it leaves.
  class Observer final : public tbb::task_scheduler_observer {
   public:
    explicit Observer(TbbScheduler& s) : tbb::task_scheduler_observer(s.arena_), s_(s) {}
    void on_scheduler_entry(bool is_worker) override {
      const std::size_t stack = guard_task_thread(ThreadStackFix::thread_stack_option);
      if (is_worker && stack != 0 && stack < s_.thread_stack_) s_.short_stack_.store(stack, std::memory_order_relaxed);
      current_slot_cache = s_.slot_from_tbb();
      if (s_.pin_) s_.pin_to_slot();
      std::lock_guard lock(s_.tids_mutex_);
      s_.tids_.insert(static_cast<pid_t>(::syscall(SYS_gettid)));
    }
    void on_scheduler_exit(bool) override { arena_pin.reset(); }

   private:
    TbbScheduler& s_;
  };

  // Binds the calling thread to its slot's CPU until arena_pin is reset; a refusal is kept for
  // run_root to throw (an observer must not throw).
  void pin_to_slot() {
    arena_pin.emplace(pinned_cpus(pin_cpus_, current_slot_cache, threads_));
    if (const int err = arena_pin->error(); err != 0) pin_error_.store(err, std::memory_order_relaxed);
  }
  // The calling thread's pin while it is in a pinned arena (a thread is in one arena at a time).
  // Held in place, not on the heap: entering the arena happens inside the measured region.
  static thread_local std::optional<ScopedPin> arena_pin;

  unsigned slot_from_tbb() const {
    const int i = tbb::this_task_arena::current_thread_index();
    return i >= 0 && static_cast<unsigned>(i) < threads_ ? static_cast<unsigned>(i) : 0;
  }
  // The arena slot of the calling thread, cached when it entered the arena: asking TBB costs a
  // call into the library per task, which would inflate the baseline we compare against.
  static thread_local unsigned current_slot_cache;
  unsigned current_slot() const { return current_slot_cache; }

  // A task blocked in a join or a wait group's wait, for the deadlock watch.
  struct Blocked {
    explicit Blocked(BlockedWatch& w) : watch(w) { watch.block(); }
    ~Blocked() { watch.unblock(); }
    BlockedWatch& watch;
  };

  // The running task's frame: the task_group its spawns go to. A thread runs tasks nested
  // (while one waits, it runs others), so the frames form a stack through `outer`, kept in a
  // thread_local. A task that parks (tbb::task::suspend) may go on on another thread, whose
  // chain it then does not belong to: so every wait sets the thread's top back to the waiting
  // task's own frame when it returns (park, join, wait), the top is reached only through a
  // fenced accessor after such a point (frame_top: docs/platform.md, a thread_local's address
  // may otherwise be reused across the switch), and a frame's end restores `outer` on whichever
  // thread it ends. What the top of a thread is between its tasks does not matter: only a
  // task's own code spawns.
  // A group is waited for at most once per batch of spawns: a join waits only for a task that
  // has not finished, and the frame's end only if something was spawned since the last wait
  // (oneTBB requires a wait before a group with unfinished tasks is destroyed; after a wait, every
  // task spawned before it has finished). The idiomatic `run, run, wait` thus costs one wait, as
  // in raw task_group code, not one per join plus one at the end.
  struct Frame {
    explicit Frame(BlockedWatch& w) : outer(frame_top()), watch(w) { frame_top() = this; }
    ~Frame() {
      if (unwaited) {  // every handle has been joined already
        const Blocked blocked(watch);
        group->wait();
      }
      frame_top() = outer;
    }
    std::optional<tbb::task_group> group;
    bool unwaited = false;  // tasks were spawned into `group` since its last wait()
    Frame* outer;
    BlockedWatch& watch;
  };
  static thread_local Frame* current_frame;
  // The calling thread's current_frame, its address computed anew at each call.
  [[gnu::noinline]] static Frame*& frame_top() noexcept {
    asm volatile("" ::: "memory");
    return current_frame;
  }
  // The calling thread's arena slot, read anew at each call (after a wait: see Frame).
  [[gnu::noinline]] static unsigned fenced_slot() noexcept {
    asm volatile("" ::: "memory");
    return current_slot_cache;
  }

  void count(Counter k) noexcept {
    sync_counts_[static_cast<std::size_t>(k) - static_cast<std::size_t>(Counter::chan_parks)].fetch_add(
        1, std::memory_order_relaxed);
  }
  // Tasks spawned and not finished, the root included.
  std::int64_t live_tasks() const noexcept {
    std::int64_t n = 0;
    for (const WorkerStats& s : slots_) {
      n += static_cast<std::int64_t>(s.get(Counter::tasks_spawned)) - static_cast<std::int64_t>(s.get(Counter::tasks_executed));
    }
    return n;
  }


  void execute(Task& t) {
    const unsigned slot = current_slot();
    if (t.spawned_on != slot) slots_[slot].add(Counter::migrations);
    {
      Frame frame(watch_);
      t.run_body();
    }
    // The task may have parked and ended on another thread: count it on this one's slot.
    slots_[fenced_slot()].add(Counter::tasks_executed);
    watch_.progress();
    if (GroupState* g = t.group) {
      t.destroy(t);
      g->pending.fetch_sub(1, std::memory_order_acq_rel);
    } else {
      t.completion.store(Task::kDone, std::memory_order_release);  // last touch: t may be freed
    }
  }

  struct LimitHold {
    explicit LimitHold(unsigned t) : threads(t) { ParallelismLimit::add(t); }
    ~LimitHold() { ParallelismLimit::remove(threads); }
    unsigned threads;
  };
  struct StackHold {
    explicit StackHold(std::size_t b) : bytes(b) { WorkerStack::add(b); }
    ~StackHold() { WorkerStack::remove(bytes); }
    std::size_t bytes;
  };

  const unsigned threads_;
  const bool pin_;
  const std::size_t thread_stack_;   // --thread-stack: the root thread's and the workers' stacks
  const std::vector<int> pin_cpus_;  // the CPUs allowed when this scheduler was built, if pin_
  std::atomic<int> pin_error_{0};    // the errno of a refused pin, 0 if none
  std::atomic<std::size_t> short_stack_{0};  // a worker's stack size, when smaller than asked
  LimitHold limit_;
  StackHold stack_;  // before the arena: oneTBB reads the size when the first arena starts its pool
  tbb::task_arena arena_;
  std::vector<WorkerStats> slots_;  // indexed by arena slot; each slot is one thread at a time
  // chan_parks, chan_readies, lock_parks, lock_readies: the counters from chan_parks on, in
  // Counter's order (count()); shared, since a park and its ready happen on any threads.
  std::array<std::atomic<std::uint64_t>, 4> sync_counts_{};
  BlockedWatch watch_;  // tasks blocked on channels, mutexes, joins and waits
  mutable std::mutex tids_mutex_;
  std::set<pid_t> tids_;
  Observer observer_;

  RootHandOff handoff_;                     // each run, from the harness thread to the root thread
  std::optional<SizedThread> root_thread_;  // last: started once every field above exists
};

thread_local TbbScheduler::Frame* TbbScheduler::current_frame = nullptr;
thread_local unsigned TbbScheduler::current_slot_cache = 0;
thread_local std::optional<ScopedPin> TbbScheduler::arena_pin;

}  // namespace

std::unique_ptr<Scheduler> make_tbb(unsigned threads, bool pin, std::size_t thread_stack) {
  return std::make_unique<TbbScheduler>(threads, pin, thread_stack);
}

}  // namespace schedlab
