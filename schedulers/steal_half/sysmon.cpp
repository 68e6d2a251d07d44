#include "sysmon.hpp"

#include <ctime>

#include "../assert.hpp"
#include "../futex.hpp"
#include "../stats.hpp"
#include "processor.hpp"

namespace schedlab {

SystemMonitor::SystemMonitor(Host& host, const std::vector<std::unique_ptr<Processor>>& procs,
                             SysmonTiming timing)
    : host_(host), procs_(procs), timing_(timing), seen_(procs.size()) {
  SCHEDLAB_ASSERT(timing_.first_sleep_us > 0 && timing_.max_sleep_us >= timing_.first_sleep_us,
                  "the monitor sleeps between rounds, and its longest sleep is at least its first");
}

SystemMonitor::~SystemMonitor() { stop(); }

void SystemMonitor::start() {
  std::lock_guard lock(thread_mutex_);
  SCHEDLAB_ASSERT(!thread_.joinable(), "the monitor starts once");
  thread_ = std::thread([this] { loop(); });
  ::pthread_setname_np(thread_.native_handle(), "schedlab-sysmon");  // for top -H and gdb; best effort
  // glibc derives the clock from the thread's id: it cannot fail for a thread that runs.
  const int clock_error = ::pthread_getcpuclockid(thread_.native_handle(), &cpu_clock_);
  SCHEDLAB_ASSERT(clock_error == 0, "a running thread has a CPU-time clock");
  (void)clock_error;
}

void SystemMonitor::stop() noexcept {
  std::lock_guard lock(thread_mutex_);
  if (!thread_.joinable()) return;
  state_.store(kStopping, std::memory_order_seq_cst);
  futex_wake(state_);
  thread_.join();
}

std::uint64_t SystemMonitor::cpu_ns() const {
  std::lock_guard lock(thread_mutex_);
  return thread_.joinable() ? thread_cpu_ns(cpu_clock_) : final_cpu_ns_;
}

void SystemMonitor::wake(bool busy) noexcept {
  std::uint32_t expected = kDeepSleep;
  if (state_.compare_exchange_strong(expected, busy ? kWokenBusy : kTicking, std::memory_order_seq_cst)) {
    futex_wake(state_);
  }
}

// Executed by the monitor's thread, for its whole life.
void SystemMonitor::loop() {
  // Before the first call, network wait or busy P there is nothing to watch.
  Sleep how = sleep_deeply(/*bounded=*/false);
  unsigned idle = 0;        // rounds in a row that retook nothing (Go's `idle`)
  bool on_trial = false;    // woken by a call, and no retake since (sysmon.hpp)
  std::uint32_t sleep_us = timing_.first_sleep_us;
  while (how != Sleep::stopping) {
    if (how == Sleep::woken_busy) {
      // The first busy P (with preemption): rounds of 10 ms, from which a call still wakes it.
      how = sleep_deeply(/*bounded=*/true);
      continue;
    }
    if (how == Sleep::woken) {
      idle = 0;  // Go: a wake by a call resets the backoff
      on_trial = true;
    }
    // A bounded deep sleep was the round's sleep already.
    if (how != Sleep::slept_round) {
      if (idle == 0) {
        sleep_us = timing_.first_sleep_us;
      } else if (idle > timing_.idle_rounds) {
        sleep_us = sleep_us > timing_.max_sleep_us / 2 ? timing_.max_sleep_us : sleep_us * 2;
      }
      if (sleep_between_rounds(sleep_us) == Sleep::stopping) break;
    }
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    unsigned in_call = 0;
    bool net = false;
    bool busy = false;
    const bool retook = tick(now_ns(), &in_call, &net, &busy);
    const bool backed_off = !retook && (sleep_us >= timing_.max_sleep_us || how == Sleep::slept_round);
    if (retook) {
      idle = 0;
      on_trial = false;
    } else if (on_trial && in_call == 0) {
      // The calls that woke it ended unseen: back to the 10 ms rounds it slept before its deep
      // sleep (Go's monitor stays at them while the program runs), and one such round before
      // it sleeps deeply again (sysmon.hpp).
      idle = timing_.idle_rounds + 1;
      sleep_us = timing_.max_sleep_us;
      on_trial = false;
    } else {
      ++idle;
    }
    if (in_call == 0 && !net && backed_off) {
      // Nothing to retake or poll: sleep until a call or a network wait, and with preemption
      // at most one 10 ms round while some P is busy.
      sleep_us = timing_.max_sleep_us;
      how = sleep_deeply(/*bounded=*/timing_.preempt && busy);
    } else {
      how = Sleep::timed_out;
    }
  }
  pending_.set(false);
  // The CPU time it used, for cpu_ns() after the join (stop() holds the mutex while joining).
  final_cpu_ns_ = thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
}

bool SystemMonitor::tick(std::uint64_t now, unsigned* in_call, bool* net, bool* busy) {
  const bool retook = retake(now, in_call, busy) != 0;
  *net = host_.netpoll(now);
  return retook;
}

unsigned SystemMonitor::retake(std::uint64_t now, unsigned* in_call, bool* busy) {
  unsigned taken = 0;
  bool marks_out = false;
  for (std::size_t i = 0; i < procs_.size(); ++i) {
    Processor& p = *procs_[i];
    Seen& seen = seen_[i];
    ProcStatus status = p.status.load(std::memory_order_acquire);
    if (status != ProcStatus::in_call) {
      if (!timing_.preempt) continue;
      // Go's retake for a running P: a slice (schedtick) that has lasted forcePreemptNS gets
      // its task marked (preemptone); it yields at its next safe point.
      if (p.idle.load(std::memory_order_relaxed)) {
        seen.slice.forget();
        continue;
      }
      *busy = true;
      const std::uint32_t tick = p.read_tick();
      if (seen.slice.overdue(tick, now) && p.preempt_tick.exchange(tick, std::memory_order_relaxed) != tick) {
        marks_.fetch_add(1, std::memory_order_relaxed);
      }
      marks_out = marks_out || p.preempt_tick.load(std::memory_order_relaxed) == tick;
      continue;
    }
    *busy = true;
    // A call seen for the first time is left alone for a round: one that ends before the next
    // round cost nobody anything (Go: "more than 1 sysmon tick (at least 20us)").
    const std::uint32_t tick = p.syscalltick.load(std::memory_order_relaxed);
    if (seen.syscalltick != tick) {
      seen.syscalltick = tick;
      seen.since_ns = now;
      ++*in_call;
      continue;
    }
    // Nothing waits on this P and some M spins or some P is idle: they take any new work, so
    // leave the P with its call, for 10 ms at most (Go: "we don't want to retake Ps if there is
    // no other work to do, but ... we want to retake them eventually").
    if (p.queues_empty() && host_.someone_looking() && now < seen.since_ns + timing_.keep_while_others_look_ns) {
      ++*in_call;
      continue;
    }
    // Whoever changes in_call first owns the P: the thread coming back from its call, or us.
    if (p.status.compare_exchange_strong(status, ProcStatus::held, std::memory_order_acq_rel)) {
      ++taken;
      retakes_.fetch_add(1, std::memory_order_relaxed);
      host_.handoff_retaken(p);
    }
  }
  pending_.set(marks_out);
  return taken;
}

SystemMonitor::Sleep SystemMonitor::sleep_between_rounds(std::uint32_t us) {
  const timespec timeout{static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000) * 1000};
  if (state_.load(std::memory_order_acquire) == kStopping) return Sleep::stopping;
  futex_wait(state_, kTicking, &timeout);
  return state_.load(std::memory_order_acquire) == kStopping ? Sleep::stopping : Sleep::timed_out;
}

SystemMonitor::Sleep SystemMonitor::sleep_deeply(bool bounded) {
  std::uint32_t expected = kTicking;
  if (!state_.compare_exchange_strong(expected, kDeepSleep, std::memory_order_seq_cst)) return Sleep::stopping;
  // The other side of note_call_entered()'s, note_network_wait()'s and note_busy()'s store-load
  // pairs: either we see a P in a call, tasks waiting on sockets or a busy P, or their thread
  // sees kDeepSleep and wakes us.
  bool watch = host_.network_waiting();
  for (const auto& p : procs_) watch = watch || p->status.load(std::memory_order_seq_cst) == ProcStatus::in_call;
  if (watch) {
    expected = kDeepSleep;
    if (state_.compare_exchange_strong(expected, kTicking, std::memory_order_seq_cst)) return Sleep::timed_out;
    // else a caller woke us already (or we are stopping)
  }
  if (!bounded && timing_.preempt && host_.any_busy()) bounded = true;  // a P left the idle list meanwhile
  std::uint32_t s = state_.load(std::memory_order_acquire);
  if (bounded && s == kDeepSleep) {
    const timespec round{static_cast<time_t>(timing_.max_sleep_us / 1'000'000),
                         static_cast<long>(timing_.max_sleep_us % 1'000'000) * 1000};
    futex_wait(state_, kDeepSleep, &round);
    expected = kDeepSleep;
    if (state_.compare_exchange_strong(expected, kTicking, std::memory_order_seq_cst)) return Sleep::slept_round;
    s = expected;  // woken meanwhile (or stopping)
  }
  while ((s = state_.load(std::memory_order_acquire)) == kDeepSleep) futex_wait(state_, kDeepSleep, nullptr);
  if (s == kStopping) return Sleep::stopping;
  if (s == kWokenBusy) {
    expected = kWokenBusy;
    if (!state_.compare_exchange_strong(expected, kTicking, std::memory_order_seq_cst)) return Sleep::stopping;
    return Sleep::woken_busy;
  }
  return Sleep::woken;
}

}  // namespace schedlab
