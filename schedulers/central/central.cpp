// central: one FIFO run queue behind one mutex, shared by every worker.
//
// The simplest correct multi-threaded scheduler, and the seeds' first counter-example: every
// spawn, every resume and every pick by every worker goes through the same lock and the same
// cache line, and a task runs on whichever worker happens to pop it, so a child rarely runs
// where its parent just wrote its data. FIFO order also means fork-join programs unfold breadth
// first: a parent is suspended at its join long before its children run, so nearly every task of
// the tree is alive at once (peak_live_tasks and stacks_allocated show it).
//
// Idle workers sleep on one condition variable; a push wakes one sleeper if there is one.
//
// Sockets (--netpoll on): the simpler integration, a poller thread of the runtime's
// (runtime/poller.hpp, PollerThread) blocks in epoll and pushes each task whose socket is ready
// onto the queue like any resumed task, waking a sleeper. Workers never poll. --netpoll off: a
// task's wait blocks its worker in poll(2), the honest behaviour of a design without hand-off.
//
// --order lifo turns the queue into a stack (push and pop at the front). It keeps the lock,
// the shared cache line and the migrations, and drops the breadth-first order: the claims
// compare central lifo with steal-half to see centralisation alone, and central fifo with
// central lifo at one thread to see order alone.
#include "central.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "../runtime/policy_runtime.hpp"
#include "../runtime/task_list.hpp"

namespace schedlab {
namespace {

// set_central_test_spawn_delay_ns(): read when a scheduler is made.
std::atomic<std::uint64_t> test_spawn_delay_ns{0};

class CentralPolicy final : public Policy {
 public:
  explicit CentralPolicy(CentralConfig config)
      : config_(config), test_spawn_delay_(test_spawn_delay_ns.load(std::memory_order_relaxed)) {}

  void submit_new(Task& t, Worker* from) override {
    if (test_spawn_delay_.count() != 0) spin_for_test();
    push(t, from);
  }
  void submit_ready(Task& t, Worker* from) override { push(t, from); }
  // A task that yields, or was preempted, goes behind everything queued, in either order.
  void submit_yield(Task& t, Worker* from) override { push(t, from, /*behind=*/true); }
  NetpollMode netpoll_mode() const override { return NetpollMode::thread; }

  // Executed by w's thread only.
  Task* next(Worker& w) override {
    std::unique_lock lock(mutex_);
    while (queue_.empty()) {
      if (stopping_) return nullptr;
      ++sleepers_;
      w.sleep_on(wakeup_, lock);
      --sleepers_;
    }
    Task* t = queue_.pop_front();
    w.stats.add(Counter::global_pops);
    return t;
  }

  void describe(SchedSnapshot& s) const override {
    std::lock_guard lock(mutex_);
    s.global_queue = queue_.size();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wakeup_.notify_all();
  }

 private:
  // `behind`: at the end every pop comes to last, whatever the order (a yield).
  void push(Task& t, Worker* from, bool behind = false) {
    count_push(from, Counter::global_pushes);  // before the push (Policy::count_push)
    bool sleeper;
    {
      std::lock_guard lock(mutex_);
      if (config_.order == LocalOrder::fifo || behind) {
        queue_.push_back(t);
      } else {
        queue_.push_front(t);
      }
      sleeper = sleepers_ > 0;
    }
    if (sleeper) wake(from, [this] { wakeup_.notify_one(); });
  }

  // The planted regression of the A/B mode's test (central.hpp): a spin, outside the lock.
  void spin_for_test() const {
    const auto until = std::chrono::steady_clock::now() + test_spawn_delay_;
    while (std::chrono::steady_clock::now() < until) {
    }
  }

  const CentralConfig config_;
  const std::chrono::nanoseconds test_spawn_delay_;
  mutable std::mutex mutex_;  // mutable: describe() reads the queue length under it
  std::condition_variable wakeup_;
  TaskList queue_;  // guarded by mutex_
  int sleepers_ = 0;  // guarded by mutex_
  bool stopping_ = false;  // guarded by mutex_
};

}  // namespace

void set_central_test_spawn_delay_ns(std::uint64_t ns) { test_spawn_delay_ns.store(ns, std::memory_order_relaxed); }

std::unique_ptr<Scheduler> make_central(const RuntimeConfig& runtime, const CentralConfig& config) {
  return make_policy_runtime(std::make_unique<CentralPolicy>(config), runtime);
}

}  // namespace schedlab
