// openmp: GCC's libgomp running the same workloads, the way HPC code writes fork-join.
//
// What it models. OpenMP tasks as GCC ships them (libgomp 12): one team of --threads threads per
// run, and one task queue per team behind one team-wide lock (team->task_lock), which every
// spawn, every dequeue and every completion takes. A thread waiting in `taskwait` runs the
// waiting task's own queued children first, then sleeps on a semaphore; idle team threads wait
// at the region's barrier and run whatever task is queued. libgomp also stops deferring tasks
// once more than 64 x threads are queued: a spawn past that runs its task at once, inside the
// spawn, as a function call (task.c, GOMP_task). So at one thread most tasks of a fork-join
// tree run undeferred, nearly at the cost of a call, and at two threads every task takes the
// team lock several times. Those are libgomp's choices and are measured as they are.
//
// How the API maps onto it (the way the OpenMP examples write fib):
//   spawn(f)    `#pragma omp task` running the task; tied (the default), so a task that waits
//               resumes on the thread that started it;
//   join(h)     if h's task has not finished, `#pragma omp taskwait` in the task that spawned
//               it: it waits for all of that task's children, as taskwait does, so it may wait
//               longer than for h alone, never forever (with the structured API a child never
//               waits for its parent). A handle must be joined by the task that spawned it
//               (taskwait waits only for the caller's own children); anything else is refused
//               with std::logic_error, as under tbb;
//   WaitGroup   go() is `omp task`; wait() is `taskwait`. A group task may add its successor to
//               its own group (api.hpp), which makes that successor its child, not the waiter's:
//               so a group task ends with a `taskwait` for its own children before it counts
//               itself done, and the waiter's taskwait covers the whole group. This is what a
//               `taskgroup` region would do, without needing the group to be one lexical block;
//   blocking    nothing: libgomp has no notion of a blocking call, the thread just blocks.
//   socket wait poll(2) on the thread (Scheduler::io_wait's default): libgomp has no poller.
//
// Threads. One parallel region per run, `num_threads(--threads)`, whose `single` thread runs the
// root; the region's end is where the team waits for every task. libgomp keeps a pool of team
// threads per thread that starts regions, so each scheduler starts its regions from a master
// thread of its own: several openmp schedulers (1 and 2 threads, as the harness interleaves
// them) then keep separate pools of stable threads, whose ids the per-thread counters attach to.
// Between runs the pool threads wait as libgomp's default wait policy says (OMP_WAIT_POLICY
// unset: spin up to GOMP_SPINCOUNT, 300000 iterations, then sleep on a futex; set those
// variables in the environment to change it).
//
// Stacks (--thread-stack, thread_stack.hpp). A taskwait runs the waited-for tasks nested on the
// waiting thread's stack, so a deep tree needs deep stacks. libgomp 12 reads OMP_STACKSIZE (and
// GOMP_STACKSIZE) once, when it loads, and otherwise creates its threads with the process's
// default stack size. So the master thread and the pool's threads are created while the process
// default is --thread-stack (DefaultThreadStack: only while this scheduler's first region starts
// its pool), each team thread checks in that region that it got that size, and a process whose
// environment sets OMP_STACKSIZE or GOMP_STACKSIZE is refused (libgomp would give its threads
// that size instead). Each team thread is armed for a stack overflow when a region starts
// (runtime/fiber_guard.hpp): an overflow is reported with the --thread-stack that fixes it.
//
// Pinning (--pin on). libgomp reads OMP_PROC_BIND and OMP_PLACES once, when it starts, so they
// cannot differ between the schedulers of one process. Instead each team thread binds itself to
// its CPU (cpu_pin.hpp: thread i on the i-th allowed CPU) in the first region, before the
// scheduler is ready, and again in a later region only if libgomp gave it another team number.
// The pool's threads serve this scheduler's master alone, so no mask needs giving back.
//
// Counters: tasks spawned and executed, and migrations (a task run by another team thread than
// its spawner's). libgomp exposes no queue, steal or idle figures: those are not measured.
#include "openmp.hpp"

#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../assert.hpp"
#include "../cpu_pin.hpp"
#include "../root_handoff.hpp"
#include "../runtime/fiber_guard.hpp"
#include "../stats.hpp"
#include "../thread_stack.hpp"

namespace schedlab {
namespace {

// The running task on this thread: which task a taskwait belongs to. Tasks are tied, so a task
// runs on one thread from start to end; a thread runs tasks nested (the ones it picks up while
// it waits), so the frames form a stack through `outer`.
struct Frame {
  Frame* outer;
};
thread_local Frame* tls_frame = nullptr;
// This thread's index in its team (omp_get_thread_num()), cached when the region starts: the
// pool threads of one scheduler belong to it alone (see the master thread above).
thread_local unsigned tls_slot = 0;
// The team number this thread is pinned for (--pin on); UINT_MAX: not pinned.
thread_local unsigned tls_pinned_slot = UINT_MAX;

class FramePush {
 public:
  FramePush() : frame_{tls_frame} { tls_frame = &frame_; }
  ~FramePush() { tls_frame = frame_.outer; }
  FramePush(const FramePush&) = delete;
  FramePush& operator=(const FramePush&) = delete;

 private:
  Frame frame_;
};

class OpenMpScheduler final : public Scheduler {
 public:
  OpenMpScheduler(unsigned threads, bool pin, std::size_t thread_stack)
      : threads_(threads),
        thread_stack_(thread_stack),
        pin_cpus_(pin ? allowed_cpus() : std::vector<int>{}),
        slots_(threads),
        tids_(threads, 0),
        creating_threads_(std::in_place, thread_stack),
        master_([this] { master_main(); }) {
    // The first region creates the pool; its threads stay for every later region of the same
    // size, so their ids are known before the first measured run.
    std::unique_lock lock(mutex_);
    state_changed_.wait(lock, [this] { return pool_ready_; });
    creating_threads_.reset();
    if (!start_error_.empty()) {
      const std::string error = start_error_;
      lock.unlock();
      stop();  // the destructor does not run for a constructor that throws
      throw ResourceError(error);
    }
  }

  ~OpenMpScheduler() override { stop(); }

  unsigned threads() const override { return threads_; }
  std::vector<pid_t> worker_tids() const override { return tids_; }

  CounterSet counters() const override {
    CounterSet c;
    for (Counter k : {Counter::tasks_spawned, Counter::tasks_executed, Counter::migrations}) {
      std::uint64_t sum = 0;
      for (const WorkerStats& s : slots_) sum += s.get(k);
      c.set(k, sum);
    }
    c.set(Counter::threads_created, threads_);
    return c;
  }

  void spawn(Task& t) override {
    const unsigned slot = tls_slot;
    slots_[slot].add(Counter::tasks_spawned);
    t.spawned_on = slot;
    t.backend = tls_frame;  // the spawning task: the only one whose taskwait covers t
    OpenMpScheduler* self = this;
    Task* task = &t;
#pragma omp task default(none) firstprivate(self, task)
    self->execute(*task);
  }

  void join(Task& t) override {
    if (t.completion.load(std::memory_order_acquire) == Task::kDone) return;
    if (t.backend != tls_frame) {
      throw std::logic_error(
          "under the openmp scheduler a JoinHandle must be joined by the task that spawned it");
    }
#pragma omp taskwait
    SCHEDLAB_ASSERT(t.completion.load(std::memory_order_acquire) == Task::kDone,
                    "openmp: a taskwait in the spawner waits for its child");
  }

  void wait(GroupState& g) override {
    if ((g.pending.load(std::memory_order_acquire) & GroupState::kCountMask) != 0) {
#pragma omp taskwait
    }
    SCHEDLAB_ASSERT((g.pending.load(std::memory_order_acquire) & GroupState::kCountMask) == 0,
                    "openmp: the owner's taskwait covers every task of its group");
    g.pending.store(0, std::memory_order_relaxed);
  }

 protected:
  void run_root(const std::function<void()>& root) override { handoff_.run(root); }

 private:
  void stop() {
    handoff_.stop();
    master_.join();  // libgomp releases the master's pool when the master thread exits
  }

  // In a region: binds the calling team thread to its CPU under --pin on, unless it already is.
  void pin_team_thread(unsigned slot) {
    if (pin_cpus_.empty() || tls_pinned_slot == slot) return;
    std::string error = pin_worker(pin_cpus_, slot, threads_, "openmp team thread " + std::to_string(slot + 1));
    if (!error.empty()) {
      std::lock_guard lock(mutex_);
      start_error_ = std::move(error);
      return;
    }
    tls_pinned_slot = slot;
  }

  // In the first region: arms the calling team thread for a stack overflow and checks that it has
  // --thread-stack (libgomp made it while the process default was that size).
  void check_team_thread_stack(unsigned slot) {
    const std::size_t got = guard_task_thread(ThreadStackFix::thread_stack_option);
    if (got == 0 || got >= thread_stack_) return;
    std::lock_guard lock(mutex_);
    start_error_ = "openmp team thread " + std::to_string(slot + 1) + " has a stack of " + stack_size_word(got) +
                   ", not the --thread-stack " + stack_size_word(thread_stack_) +
                   ": libgomp started it before this scheduler; run openmp in a process of its own";
  }

  // The thread that starts every parallel region of this scheduler.
  void master_main() {
#pragma omp parallel num_threads(threads_)
    {
      // libgomp gives a team fewer threads than asked only when the system limits it
      // (OMP_THREAD_LIMIT, OMP_DYNAMIC); a team of the wrong size would mislabel every row.
      SCHEDLAB_ASSERT(static_cast<unsigned>(omp_get_num_threads()) == threads_,
                      "openmp: the team has --threads threads");
      const auto slot = static_cast<unsigned>(omp_get_thread_num());
      check_team_thread_stack(slot);
      pin_team_thread(slot);
      tids_[slot] = static_cast<pid_t>(::syscall(SYS_gettid));
    }
    {
      std::lock_guard lock(mutex_);
      pool_ready_ = true;
    }
    state_changed_.notify_all();
    handoff_.serve([this](const std::function<void()>& root) { run_region(root); });
  }

  // One run: the root on the `single` thread, every task done at the region's end. Throws the
  // root's exception after the region (none may cross its boundary).
  void run_region(const std::function<void()>& root) {
    std::exception_ptr error;
#pragma omp parallel num_threads(threads_)
    {
      tls_slot = static_cast<unsigned>(omp_get_thread_num());
      (void)guard_task_thread(ThreadStackFix::thread_stack_option);  // a thread_local test: armed in the first region
      pin_team_thread(tls_slot);
#pragma omp single
      {
        WorkerStats& stats = slots_[tls_slot];
        stats.add(Counter::tasks_spawned);
        try {
          FramePush frame;
          root();
        } catch (...) {
          error = std::current_exception();
        }
        stats.add(Counter::tasks_executed);  // a root that threw has been executed too
      }
    }
    if (error) std::rethrow_exception(error);
    std::lock_guard lock(mutex_);
    if (!start_error_.empty()) throw ResourceError(start_error_);
  }

  void execute(Task& t) {
    const unsigned slot = tls_slot;  // a tied task stays on this thread to its end
    if (t.spawned_on != slot) slots_[slot].add(Counter::migrations);
    GroupState* group = t.group;
    {
      FramePush frame;
      t.run_body();
      if (group != nullptr) {
        // Successors this group task added to its own group are its children (see above).
#pragma omp taskwait
      }
    }
    slots_[slot].add(Counter::tasks_executed);
    if (group != nullptr) {
      t.destroy(t);  // nobody holds a group task
      group->pending.fetch_sub(1, std::memory_order_acq_rel);
    } else {
      t.completion.store(Task::kDone, std::memory_order_release);  // last touch: t may be freed
    }
  }

  const unsigned threads_;
  const std::size_t thread_stack_;   // --thread-stack: the master's and the team threads' stacks
  const std::vector<int> pin_cpus_;  // --pin on: the CPUs the team is bound to; empty: off
  std::vector<WorkerStats> slots_;  // indexed by team thread number
  std::vector<pid_t> tids_;         // written by the first region, before the constructor returns

  std::mutex mutex_;
  std::condition_variable state_changed_;  // any of the fields below changed
  bool pool_ready_ = false;
  std::string start_error_;  // a team thread whose pin was refused, or whose stack is too small
  RootHandOff handoff_;      // each run, from the harness thread to the master
  // The process's default thread stack is --thread-stack while the master and its pool start.
  std::optional<DefaultThreadStack> creating_threads_;
  std::thread master_;  // last: starts once every field above exists
};

}  // namespace

std::string openmp_thread_stack_conflict() {
  for (const char* name : {"OMP_STACKSIZE", "GOMP_STACKSIZE"}) {
    if (const char* value = std::getenv(name); value != nullptr) {
      return std::string(name) + "=" + value +
             " is set: libgomp gives its threads that stack instead of --thread-stack; unset " + name +
             " and use --thread-stack";
    }
  }
  return {};
}

std::unique_ptr<Scheduler> make_openmp(unsigned threads, bool pin, std::size_t thread_stack) {
  if (std::string why = openmp_thread_stack_conflict(); !why.empty()) throw std::invalid_argument(why);
  return std::make_unique<OpenMpScheduler>(threads, pin, thread_stack);
}

}  // namespace schedlab
