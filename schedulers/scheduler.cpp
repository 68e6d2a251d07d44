#include "scheduler.hpp"

#include <atomic>
#include <stdexcept>
#include <string>

namespace schedlab {
namespace {
std::atomic<Scheduler*> g_active{nullptr};
std::atomic<std::uint64_t> g_unobserved{0};
}  // namespace

namespace detail {
Scheduler* active_scheduler() noexcept { return g_active.load(std::memory_order_acquire); }
void note_unobserved_exception() noexcept { g_unobserved.fetch_add(1, std::memory_order_relaxed); }

}  // namespace detail

void Scheduler::run(const std::function<void()>& root) {
  Scheduler* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this, std::memory_order_acq_rel)) {
    throw std::logic_error("another Scheduler::run() is active in this process");
  }
  struct Deactivate {
    ~Deactivate() { g_active.store(nullptr, std::memory_order_release); }
  } deactivate;
  const std::uint64_t unobserved_before = g_unobserved.load(std::memory_order_relaxed);
  run_root(root);
  const std::uint64_t lost = g_unobserved.load(std::memory_order_relaxed) - unobserved_before;
  if (lost != 0) {
    throw std::runtime_error(std::to_string(lost) +
                             " task exception(s) were never observed: join every JoinHandle "
                             "and wait every WaitGroup whose tasks may throw");
  }
}

}  // namespace schedlab
