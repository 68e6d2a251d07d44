// serial: the sequential elision, T_S in work-stealing terms.
//
// spawn(f) calls f at once on the caller's stack and stores its result; join() and wait() have
// nothing left to wait for. Every workload runs exactly the same code as under the parallel
// schedulers, minus the scheduling, so `serial` time / `X` time at one thread is X's work
// overhead, and `serial` time / `X` time at p threads is X's speedup over the best sequential
// execution of the same program.
//
// A socket wait is poll(2) on the harness thread (Scheduler::io_wait's default).
//
// Runs on the harness thread; with --pin on, bound to the first allowed CPU for the run and
// given its previous mask back after (two sched_setaffinity calls inside the measured region,
// a few microseconds). Counters are exact and trivially measured: it never steals,
// migrates, parks or switches stacks; peak_live_tasks is the deepest nesting of running tasks.
#include "serial.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <optional>

#include "../assert.hpp"
#include "../cpu_pin.hpp"
#include "../runtime/fiber_guard.hpp"
#include "../stats.hpp"

namespace schedlab {
namespace {

class SerialScheduler final : public Scheduler {
 public:
  explicit SerialScheduler(bool pin) : pin_(pin), pin_cpus_(pin ? allowed_cpus() : std::vector<int>{}) {
    finished_tasks_need_join_ = false;  // every task has finished by the time its handle exists
  }

  unsigned threads() const override { return 1; }
  std::vector<pid_t> worker_tids() const override {
    const pid_t tid = tid_.load(std::memory_order_relaxed);
    if (tid == 0) return {};
    return {tid};
  }

  CounterSet counters() const override {
    CounterSet c;
    for (std::size_t k = 0; k < kCounterCount; ++k) c.value[k] = stats_.get(static_cast<Counter>(k));
    c.measured.set();
    c[Counter::peak_live_tasks] = peak_.load(std::memory_order_relaxed);
    c[Counter::threads_created] = 0;
    c[Counter::stacks_allocated] = 0;
    return c;
  }

  void spawn(Task& t) override {
    stats_.add(Counter::tasks_spawned);
    execute(t);
  }
  // A spawn ran its task to the end before returning, so there is never anything to wait for.
  void join(Task& t) override {
    SCHEDLAB_ASSERT(t.completion.load(std::memory_order_relaxed) == Task::kDone,
                    "serial: a joined task finished inside its spawn");
  }
  void wait(GroupState& g) override {
    SCHEDLAB_ASSERT((g.pending.load(std::memory_order_relaxed) & GroupState::kCountMask) == 0,
                    "serial: a group's tasks finished inside their spawns");
    g.pending.store(0, std::memory_order_relaxed);
  }

 protected:
  void run_root(const std::function<void()>& root) override {
    std::optional<ScopedPin> pinned;
    if (pin_) {
      pinned.emplace(pinned_cpus(pin_cpus_, 0, 1));
      if (pinned->error() != 0) {
        throw ResourceError(pin_refused("serial's thread", pinned->error()));
      }
    }
    // Tasks nest on this thread's own stack: an overflow is reported, naming the stack limit.
    (void)guard_task_thread(ThreadStackFix::stack_limit);
    tid_.store(static_cast<pid_t>(::syscall(SYS_gettid)), std::memory_order_relaxed);
    peak_.store(0, std::memory_order_relaxed);
    stats_.add(Counter::tasks_spawned);
    enter();
    struct Leave {
      SerialScheduler& s;
      ~Leave() {
        s.stats_.add(Counter::tasks_executed);
        --s.live_;
      }
    } leave{*this};
    root();
  }

 private:
  void enter() {
    if (++live_ > peak_.load(std::memory_order_relaxed)) peak_.store(live_, std::memory_order_relaxed);
  }
  void execute(Task& t) {
    enter();
    t.run_body();
    --live_;
    stats_.add(Counter::tasks_executed);
    if (GroupState* g = t.group) {
      t.destroy(t);
      g->pending.fetch_sub(1, std::memory_order_relaxed);
    } else {
      t.completion.store(Task::kDone, std::memory_order_relaxed);
    }
  }

  const bool pin_;
  const std::vector<int> pin_cpus_;  // the CPUs allowed when this scheduler was built, if pin_
  WorkerStats stats_;
  std::uint64_t live_ = 0;
  std::atomic<std::uint64_t> peak_{0};
  std::atomic<pid_t> tid_{0};
};

}  // namespace

std::unique_ptr<Scheduler> make_serial(bool pin) { return std::make_unique<SerialScheduler>(pin); }

}  // namespace schedlab
