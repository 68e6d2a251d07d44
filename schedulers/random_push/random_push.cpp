// random-push: each new task onto a random worker's queue; a worker runs from its own queue,
// steals one task from another's when its own is empty, and sleeps when it finds nothing.
//
// The worked example of docs/extending.md, kept small on purpose: not a design under study (no
// preset or claim runs it), but a policy every scheduler test runs like the others. It shows
// what a policy writes itself (where a task goes, where a worker looks, its pops) and what the
// contract of policy.hpp does for it (w.proc, the idle accounting of sleep_on, the wake-up
// count of wake(), the root's push through count_push).
//
// Random placement spreads a fork-join tree over the workers at once, at the price of the
// locality that `fair`'s round robin also gives up: a child rarely runs where its parent wrote.
//
//   spawn ──► queue[random] ──► its worker pops the newest (LIFO)
//   resume ─► queue[waker's]      an idle worker steals the oldest of another's, else sleeps
//
// Each queue has its own mutex and its owner sleeps on its own condition variable; a push wakes
// the queue's owner if it sleeps. A worker sleeps only after its own queue, looked at under its
// lock, is empty, so no push to it is missed; a push to a busy worker's queue waits for that
// worker or a thief that is awake (sleepers are not woken to steal: the simplest rule, which
// gives up some parallelism when tasks are few).
#include "random_push.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "../runtime/policy_runtime.hpp"

namespace schedlab {
namespace {

class RandomPushPolicy final : public Policy {
 public:
  explicit RandomPushPolicy(unsigned workers) : queues_(workers) {
    for (unsigned i = 0; i < workers; ++i) queues_[i].random = 0x9E3779B9u * (i + 1);  // xorshift: nonzero
  }

  // A new task goes to a random worker's queue: the spawner's generator, or (the root, from
  // outside) a shared counter's next worker.
  void submit_new(Task& t, Worker* from) override {
    const std::size_t target = from != nullptr ? next_random(queues_[from->index()]) % queues_.size()
                                               : outside_.fetch_add(1, std::memory_order_relaxed) % queues_.size();
    push(queues_[target], t, from);
  }

  // A resumed task goes to the queue of the worker that woke it (its data is likely there), or a
  // random one when the waker is not a worker (the poller thread).
  void submit_ready(Task& t, Worker* from) override {
    if (from == nullptr) {
      submit_new(t, nullptr);
      return;
    }
    push(queues_[from->index()], t, from);
  }

  // A task that yields, or was preempted, goes to the old end of its worker's queue: its worker
  // runs everything newer first (and a thief may take it).
  void submit_yield(Task& t, Worker* from) override {
    if (from == nullptr) {
      submit_new(t, nullptr);
      return;
    }
    push(queues_[from->index()], t, from, /*behind=*/true);
  }

  // Executed by w's thread only: its own queue's newest task, else another's oldest, else sleep.
  Task* next(Worker& w) override {
    Queue& mine = queues_[w.index()];
    for (;;) {
      {
        std::lock_guard lock(mine.mutex);
        if (!mine.tasks.empty()) {
          Task* t = mine.tasks.front();
          mine.tasks.pop_front();
          w.stats.add(Counter::local_pops);
          return t;
        }
      }
      if (Task* t = steal(w)) return t;
      std::unique_lock lock(mine.mutex);
      while (mine.tasks.empty()) {
        if (stopping_.load(std::memory_order_relaxed)) return nullptr;
        mine.sleeping = true;
        w.sleep_on(mine.wakeup, lock);
        mine.sleeping = false;
      }
    }
  }

  void shutdown() override {
    stopping_.store(true, std::memory_order_relaxed);
    for (Queue& q : queues_) {
      std::lock_guard lock(q.mutex);
      q.wakeup.notify_all();
    }
  }

  void describe(SchedSnapshot& s) const override {
    for (const Queue& q : queues_) {
      std::lock_guard lock(q.mutex);
      s.local_queues.push_back(q.tasks.size());
    }
  }

 private:
  struct alignas(64) Queue {
    mutable std::mutex mutex;  // mutable: describe() reads the length under it
    std::condition_variable wakeup;
    std::deque<Task*> tasks;  // guarded by mutex; newest at the front
    bool sleeping = false;   // guarded by mutex
    std::uint32_t random = 1;  // this worker's xorshift state; only its worker touches it
  };

  static std::uint32_t next_random(Queue& q) noexcept {
    std::uint32_t x = q.random;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return q.random = x;
  }

  // `behind`: at the old end (a yield), not the new one.
  void push(Queue& q, Task& t, Worker* from, bool behind = false) {
    count_push(from, Counter::local_pushes);  // before the push (Policy::count_push)
    bool sleeper;
    {
      std::lock_guard lock(q.mutex);
      if (behind) {
        q.tasks.push_back(&t);
      } else {
        q.tasks.push_front(&t);
      }
      sleeper = q.sleeping;
    }
    if (sleeper) wake(from, [&q] { q.wakeup.notify_one(); });
  }

  // Executed by w: the oldest task of the first other queue that has one, starting at a random
  // worker (the oldest: in a fork-join tree, the biggest piece of work left).
  Task* steal(Worker& w) {
    const std::size_t n = queues_.size();
    const std::size_t start = next_random(queues_[w.index()]) % n;
    for (std::size_t i = 0; i < n; ++i) {
      Queue& victim = queues_[(start + i) % n];
      if (&victim == &queues_[w.index()]) continue;
      w.stats.add(Counter::steal_attempts);
      Task* t = nullptr;
      {
        std::lock_guard lock(victim.mutex);
        if (!victim.tasks.empty()) {
          t = victim.tasks.back();
          victim.tasks.pop_back();
        }
      }
      if (t != nullptr) {
        w.stats.add(Counter::steals);
        w.stats.add(Counter::tasks_stolen);
        return t;
      }
    }
    return nullptr;
  }

  std::vector<Queue> queues_;
  std::atomic<std::uint32_t> outside_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace

std::unique_ptr<Scheduler> make_random_push(const RuntimeConfig& runtime) {
  return make_policy_runtime(std::make_unique<RandomPushPolicy>(runtime.threads), runtime);
}

}  // namespace schedlab
