// algorithms.hpp: the port of Boost 1.74's two multi-thread scheduling algorithms,
// algo::work_stealing (PoolWorkStealing) and algo::shared_work (PoolSharedWork), with the state
// that 1.74 keeps in static members (work_stealing's registry of instances, shared_work's queue)
// moved into a per-scheduler Pool (what a scheduler's threads share), and the idle policy both
// share (IdleWait). boost_fiber.cpp says why (its "Algorithms" and "Idle waiting") and how the
// scheduler uses them.
//
// Invariants: a Pool creates every thread's algorithm before any thread runs, and keeps them all
// alive until it goes (after the threads), so a thief may look at any of them at any time; a
// pinned fiber (a thread's main or dispatcher fiber) never leaves its thread's queue.
#pragma once

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/detail/context_spinlock_queue.hpp>
#include <boost/fiber/scheduler.hpp>
#include <boost/fiber/type.hpp>
#include <boost/intrusive_ptr.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <vector>

#include "boost_fiber.hpp"

namespace schedlab::boost_fiber {

namespace bf = boost::fibers;
using bf::context;

class Pool;

// The idle policy both algorithms share (see boost_fiber.cpp, "Idle waiting"): spin while a run
// is active, sleep between runs until a run starts or one of this thread's fibers is readied from
// another thread.
class IdleWait {
 public:
  explicit IdleWait(const Pool& pool) : pool_(pool) {}
  void suspend_until(const std::chrono::steady_clock::time_point& until) noexcept;
  void notify() noexcept {
    {
      std::lock_guard lock(mutex_);
      flag_ = true;
    }
    wake_.notify_all();
  }

 private:
  const Pool& pool_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool flag_ = false;  // notified since the last sleep
};

// Boost 1.74's algo::work_stealing, with its static registry moved into the Pool.
class PoolWorkStealing final : public bf::algo::algorithm {
 public:
  PoolWorkStealing(Pool& pool, unsigned index);

  void awakened(context* ctx) noexcept override {
    if (!ctx->is_context(bf::type::pinned_context)) ctx->detach();
    ready_.push(ctx);
  }
  context* pick_next() noexcept override;
  bool has_ready_fibers() const noexcept override { return !ready_.empty(); }
  void suspend_until(const std::chrono::steady_clock::time_point& until) noexcept override {
    idle_.suspend_until(until);
  }
  void notify() noexcept override { idle_.notify(); }

  context* steal() noexcept { return ready_.steal(); }  // a pinned fiber is never stolen

 private:
  Pool& pool_;
  const unsigned index_;
  // Boost's default queue for work_stealing (BOOST_FIBERS_USE_SPMC_QUEUE is not defined): a
  // ring behind a TTAS spinlock; pop and steal both take the oldest fiber.
  bf::detail::context_spinlock_queue ready_;
  std::minstd_rand victims_;
  IdleWait idle_;
};

// Boost 1.74's algo::shared_work, with its static queue moved into the Pool.
class PoolSharedWork final : public bf::algo::algorithm {
 public:
  explicit PoolSharedWork(Pool& pool);

  void awakened(context* ctx) noexcept override;
  context* pick_next() noexcept override;
  bool has_ready_fibers() const noexcept override;
  void suspend_until(const std::chrono::steady_clock::time_point& until) noexcept override {
    idle_.suspend_until(until);
  }
  void notify() noexcept override { idle_.notify(); }

 private:
  Pool& pool_;
  // This thread's main and dispatcher fibers: pinned, never on the shared queue.
  bf::scheduler::ready_queue_type pinned_;
  IdleWait idle_;
};

class Pool {
 public:
  // Every thread's algorithm exists before any thread runs: a thief may look at any of them
  // from its first dispatch on.
  Pool(BoostFiberAlgorithm kind, unsigned threads) {
    for (unsigned i = 0; i < threads; ++i) {
      if (kind == BoostFiberAlgorithm::work_stealing) {
        auto* ws = new PoolWorkStealing(*this, i);
        stealers_.push_back(ws);
        algorithms_.emplace_back(ws);
      } else {
        algorithms_.emplace_back(new PoolSharedWork(*this));
      }
    }
  }

  bool running() const noexcept { return running_.load(std::memory_order_acquire); }
  // A run starts: idle threads stop sleeping and look for work. Called by the harness thread.
  void start_run() {
    running_.store(true, std::memory_order_release);
    for (const auto& a : algorithms_) a->notify();
  }
  void end_run() { running_.store(false, std::memory_order_release); }

  // Called by worker `index`, once, on its own thread. The pool keeps every algorithm alive
  // until it goes (after the threads), so a thief never looks at a freed one.
  void install(unsigned index) { context::active()->get_scheduler()->set_algo(algorithms_[index]); }

  unsigned threads() const noexcept { return static_cast<unsigned>(algorithms_.size()); }
  PoolWorkStealing* stealer(unsigned i) const noexcept { return stealers_[i]; }

  std::mutex shared_mutex;            // shared_work's queue
  std::deque<context*> shared_queue;  // guarded by shared_mutex

 private:
  std::atomic<bool> running_{false};
  std::vector<boost::intrusive_ptr<bf::algo::algorithm>> algorithms_;  // by thread index
  std::vector<PoolWorkStealing*> stealers_;                            // work_stealing only
};

}  // namespace schedlab::boost_fiber
