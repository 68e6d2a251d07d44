// algorithms.cpp: see algorithms.hpp; the idle wait, and the two algorithms' choice of the next
// fiber to run (work_stealing's steal from a random other thread, shared_work's shared queue).
#include "algorithms.hpp"

namespace schedlab::boost_fiber {

void IdleWait::suspend_until(const std::chrono::steady_clock::time_point& until) noexcept {
  if (pool_.running()) return;  // skynet's suspend=false: look again at once
  std::unique_lock lock(mutex_);
  auto woken = [this] { return flag_ || pool_.running(); };
  if (until == std::chrono::steady_clock::time_point::max()) {
    wake_.wait(lock, woken);
  } else {
    wake_.wait_until(lock, until, woken);
  }
  flag_ = false;
}

PoolWorkStealing::PoolWorkStealing(Pool& pool, unsigned index)
    : pool_(pool), index_(index), victims_(std::random_device{}()), idle_(pool) {}

context* PoolWorkStealing::pick_next() noexcept {
  context* victim = ready_.pop();
  if (victim != nullptr) {
    if (!victim->is_context(bf::type::pinned_context)) context::active()->attach(victim);
    return victim;
  }
  const unsigned n = pool_.threads();
  if (n < 2) return nullptr;  // nobody to steal from (see the departures in boost_fiber.cpp)
  std::uniform_int_distribution<unsigned> pick(0, n - 1);
  unsigned tries = 0;
  do {
    unsigned id;
    do {
      ++tries;
      id = pick(victims_);
    } while (id == index_);
    victim = pool_.stealer(id)->steal();
  } while (victim == nullptr && tries < n);
  if (victim != nullptr) context::active()->attach(victim);
  return victim;
}

PoolSharedWork::PoolSharedWork(Pool& pool) : pool_(pool), idle_(pool) {}

void PoolSharedWork::awakened(context* ctx) noexcept {
  if (ctx->is_context(bf::type::pinned_context)) {
    pinned_.push_back(*ctx);
    return;
  }
  ctx->detach();
  std::lock_guard lock(pool_.shared_mutex);
  pool_.shared_queue.push_back(ctx);
}

context* PoolSharedWork::pick_next() noexcept {
  {
    std::unique_lock lock(pool_.shared_mutex);
    if (!pool_.shared_queue.empty()) {
      context* ctx = pool_.shared_queue.front();
      pool_.shared_queue.pop_front();
      lock.unlock();
      context::active()->attach(ctx);
      return ctx;
    }
  }
  if (pinned_.empty()) return nullptr;
  context* ctx = &pinned_.front();
  pinned_.pop_front();
  return ctx;
}

bool PoolSharedWork::has_ready_fibers() const noexcept {
  std::lock_guard lock(pool_.shared_mutex);
  return !pool_.shared_queue.empty() || !pinned_.empty();
}

}  // namespace schedlab::boost_fiber
