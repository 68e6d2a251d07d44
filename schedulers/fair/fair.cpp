// fair: the static fair split of the seeds ("Concurrency in Go", ch. 6).
//
// Each new task is bound at spawn time to a processor, round robin, and only that processor
// ever runs it: no stealing, no migration after the binding. With n processors and x equal tasks
// every processor gets x/n; with unequal tasks (one long loop, a fork-join tree whose halves
// differ) a processor that finishes its share sits idle while another still has a queue, and
// the binding itself sends half of a parent's children to another core's cache. The `idle_ns`
// counter and the loops one-long case show both.
//
// Each processor has its own queue behind its own mutex (other workers push into it when they
// bind a task there) and its worker sleeps on its own condition variable. The order within a
// queue is a parameter (LIFO by default, so that `fair` differs from `steal-half` only in the
// binding and not in the order).
//
// Sockets (--netpoll on): the simpler integration, a poller thread of the runtime's
// (runtime/poller.hpp, PollerThread) readies a task whose socket is ready by pushing it back to
// the processor it is bound to, like any resumed task. Workers never poll. --netpoll off: a
// task's wait blocks its worker in poll(2), and its processor's other tasks wait with it.
//
//   spawn on P1 ──► cursor(P1) = P2 ──► queue[P2] ──► only P2's worker pops it
//   resume of t (a join, a send, an unlock) ──► queue[t.affinity]
//   yield or preemption of t ──► the far end of queue[t.affinity], behind everything queued
#include "fair.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "../assert.hpp"
#include "../runtime/policy_runtime.hpp"
#include "../runtime/task_list.hpp"

namespace schedlab {
namespace {

class FairPolicy final : public Policy {
 public:
  FairPolicy(unsigned processors, FairConfig config) : config_(config), procs_(processors) {}

  // w holds processor w.index() for life (the runtime's default w.proc).
  void on_worker_added(Worker& w) override { procs_[w.index()].bind_cursor = w.index(); }

  // Binds t to the next processor of the spawner's round-robin cursor (the root goes to P0).
  void submit_new(Task& t, Worker* from) override {
    std::uint32_t target = 0;
    if (from != nullptr) {
      Processor& mine = procs_[from->proc];
      target = mine.bind_cursor;
      mine.bind_cursor = (mine.bind_cursor + 1) % static_cast<std::uint32_t>(procs_.size());
    }
    t.affinity = target;
    push(procs_[target], t, from);
  }

  // A resumed task goes back to the processor it is bound to.
  void submit_ready(Task& t, Worker* from) override {
    push(procs_[t.affinity], t, from);
  }
  // A task that yields, or was preempted, goes behind everything queued on its processor.
  void submit_yield(Task& t, Worker* from) override { push(procs_[t.affinity], t, from, /*behind=*/true); }
  NetpollMode netpoll_mode() const override { return NetpollMode::thread; }

  // Executed by w's thread only: it takes work from its own processor's queue and nowhere else.
  Task* next(Worker& w) override {
    Processor& p = procs_[w.proc];
    std::unique_lock lock(p.mutex);
    while (p.queue.empty()) {
      if (stopping_.load(std::memory_order_relaxed)) return nullptr;
      p.sleeping = true;
      w.sleep_on(p.wakeup, lock);
      p.sleeping = false;
    }
    w.stats.add(Counter::local_pops);
    Task* t = p.queue.pop_front();
    SCHEDLAB_ASSERT(t->affinity == w.proc, "a task runs only on the processor it was bound to");
    return t;
  }

  void shutdown() override {
    stopping_.store(true, std::memory_order_relaxed);
    for (Processor& p : procs_) {
      std::lock_guard lock(p.mutex);
      p.wakeup.notify_all();
    }
  }

  void describe(SchedSnapshot& s) const override {
    for (const Processor& p : procs_) {
      std::lock_guard lock(p.mutex);
      s.local_queues.push_back(p.queue.size());
    }
  }

 private:
  struct alignas(64) Processor {
    mutable std::mutex mutex;  // mutable: describe() reads the queue length under it
    std::condition_variable wakeup;
    TaskList queue;                 // guarded by mutex
    bool sleeping = false;          // guarded by mutex
    std::uint32_t bind_cursor = 0;  // only this processor's worker touches it
  };

  // `behind`: after every queued task whatever the order (a yield).
  void push(Processor& p, Task& t, Worker* from, bool behind = false) {
    count_push(from, Counter::local_pushes);  // before the push (Policy::count_push)
    bool sleeper;
    {
      std::lock_guard lock(p.mutex);
      if (config_.order == LocalOrder::lifo && !behind) {
        p.queue.push_front(t);
      } else {
        p.queue.push_back(t);
      }
      sleeper = p.sleeping;
    }
    if (sleeper) wake(from, [&p] { p.wakeup.notify_one(); });
  }

  const FairConfig config_;
  std::vector<Processor> procs_;
  std::atomic<bool> stopping_{false};
};

}  // namespace

std::unique_ptr<Scheduler> make_fair(const RuntimeConfig& runtime, const FairConfig& config) {
  return make_policy_runtime(std::make_unique<FairPolicy>(runtime.threads, config), runtime);
}

}  // namespace schedlab
