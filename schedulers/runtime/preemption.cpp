#include "preemption.hpp"

#include <pthread.h>
#include <time.h>

#include "../assert.hpp"
#include "../futex.hpp"
#include "../stats.hpp"
#include "runtime.hpp"

namespace schedlab {

PreemptMonitor::PreemptMonitor(FiberRuntime& runtime) : runtime_(runtime), watch_(runtime.config().max_threads) {}

PreemptMonitor::~PreemptMonitor() { stop(); }

void PreemptMonitor::start() {
  std::lock_guard lock(thread_mutex_);
  SCHEDLAB_ASSERT(!thread_.joinable(), "the preemption monitor starts once");
  thread_ = std::thread([this] { loop(); });
  ::pthread_setname_np(thread_.native_handle(), "schedlab-preempt");  // best effort, for top -H
  handle_ = thread_.native_handle();
}

void PreemptMonitor::stop() noexcept {
  std::lock_guard lock(thread_mutex_);
  if (!thread_.joinable()) return;
  state_.store(kStopping, std::memory_order_seq_cst);
  futex_wake(state_);
  thread_.join();
}

void PreemptMonitor::note_run_started() noexcept {
  std::uint32_t expected = kDeepSleep;
  if (state_.compare_exchange_strong(expected, kTicking, std::memory_order_seq_cst)) futex_wake(state_);
}

std::uint64_t PreemptMonitor::cpu_ns() const {
  std::lock_guard lock(thread_mutex_);
  if (!thread_.joinable()) return final_cpu_ns_;
  clockid_t clock{};
  return ::pthread_getcpuclockid(handle_, &clock) == 0 ? thread_cpu_ns(clock) : 0;
}

// Executed by the monitor's thread for its whole life: asleep until a run starts, then a round
// every 10 ms (Go's sysmon, backed off to its longest sleep) until a round finds every worker
// idle.
void PreemptMonitor::loop() {
  constexpr timespec kRound{0, static_cast<long>(kForcePreemptNs)};
  for (;;) {
    std::uint32_t s;
    while ((s = state_.load(std::memory_order_acquire)) == kDeepSleep) futex_wait(state_, kDeepSleep);
    if (s == kStopping) break;
    futex_wait(state_, kTicking, &kRound);
    if (state_.load(std::memory_order_acquire) == kStopping) break;
    rounds_.fetch_add(1, std::memory_order_relaxed);
    if (!round(now_ns())) {
      // Every worker idle: sleep until the next run (one that started since is seen: its
      // note_run_started finds kDeepSleep, or our CAS fails and we go round again).
      std::uint32_t ticking = kTicking;
      state_.compare_exchange_strong(ticking, kDeepSleep, std::memory_order_seq_cst);
    }
  }
  pending_.set(false);
  final_cpu_ns_ = thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
}

bool PreemptMonitor::round(std::uint64_t now) {
  bool busy = false;
  bool marks_out = false;
  const unsigned n = runtime_.worker_count();
  for (unsigned i = 0; i < n; ++i) {
    Worker& w = runtime_.worker(i);
    if (w.parked()) {
      watch_[i].forget();
      continue;
    }
    busy = true;
    const std::uint32_t tick = w.slices.load(std::memory_order_relaxed);
    if (watch_[i].overdue(tick, now)) w.preempt_mark.store(tick, std::memory_order_relaxed);
    marks_out = marks_out || w.preempt_mark.load(std::memory_order_relaxed) == tick;
  }
  pending_.set(marks_out);
  return busy;
}

}  // namespace schedlab
