// sysmon.hpp: steal-half's system monitor, Go's sysmon: one thread per runtime, holding no P,
// that takes a P back from a thread stuck in a blocking call (Go's retake) and gives it to
// another thread (the policy's handoff, Go's handoffp), polls the network when nobody has for
// 10 ms (the policy's netpoll), and marks a task that has held its P for 10 ms so that it
// yields at its next safe point (Go's retake and preemptone; --preempt safepoint,
// runtime/preemption.hpp).
//
// Why a monitor. Under --handoff lazy a thread entering a blocking call keeps its P, marked
// `in_call` (Go's entersyscall), so that a call that does not block costs two atomic operations
// and no thread switch. Somebody must notice a call that does block, while the P's other tasks
// wait: the monitor looks at every P once per round and retakes a P it found in the same call
// (the same syscalltick) in two consecutive rounds.
//
// Its rounds, as Go's sysmon (runtime/proc.go, Go 1.19-1.22): it sleeps 20 µs between rounds
// while rounds keep retaking Ps; after 50 rounds in a row that retook nothing it doubles its
// sleep each round, up to 10 ms. Preemption keeps it looking while any P is busy, as Go's does:
// with --preempt safepoint (the default) it sleeps deeply only when every P is idle, and the
// first P to leave the idle list wakes it (note_busy) straight into its 10 ms rounds (a round
// costs ~10-15 µs of CPU on a VM: ~0.1-0.15% of a core while tasks run; docs/schedulers.md has the
// figures). Two departures from Go, both about its other duties:
//   - with --preempt off it sleeps deeply (without a timeout) when a round finds no P in a call
//     and no task waiting on a socket once it has backed off to 10 ms, where Go sleeps deeply
//     only when every P is idle; a thread entering a call wakes it, as Go's entersyscall_sysmon
//     does, and so does a worker that finds tasks waiting on sockets (note_network_wait);
//   - woken so, it starts again at 20 µs, as Go does (Go resets its backoff "as a bet that since
//     it had retaken a P from a syscall before, it may need to do it again shortly"), but holds
//     to the bet only until a round finds no P in a call before it has retaken one: the calls
//     that woke it ended unseen, and it goes back at once to the 10 ms rounds it slept before its
//     deep sleep, where Go's monitor stays while the program runs; it sleeps deeply again only
//     after one such round that finds no call. Go's monitor is woken that way rarely; schedlab's
//     at the start of nearly every repetition of a benchmark. A round costs ~10-15 µs of CPU on
//     a VM (a timed sleep is two exits to the hypervisor: docs/platform.md), and a worker's
//     repetition grew by about as much though the monitor ran on the other CPU (with the monitor
//     never woken, warm reads under lazy took the time of --handoff off). Fifty rounds per
//     repetition of warm reads would cost a few percent, and so did the six of a backoff
//     doubling from 20 µs (quick preset, warm iomix at 1 thread: 1.04× [1.02, 1.06] the time of
//     --handoff off; 1 round and 1.02× [1.01, 1.02] with the 10 ms return). Calls that last are
//     seen on trial all the same (they span rounds), and each retake grants Go's full 50 rounds
//     again; a long call that starts after a failed trial waits for a 10 ms round, as under Go's
//     backed-off monitor.
// The kernel decides how long a 20 µs sleep lasts: with Linux's default timer slack of 50 µs it
// lasted 34-120 µs (fastest to average) on the project's loaded VM (docs/platform.md), as Go's
// own usleep(20) does there; the monitor keeps that slack, as Go's does. sysmon_wakeups and
// sysmon_cpu_ns in a run's CSV row show how many rounds it ran and what they cost.
//
// tick() is one round of duties, called after each sleep: the retakes and preemption marks
// (Go's retake does both in one pass over the Ps), then the host's network poll.
#pragma once

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../runtime/preemption.hpp"

namespace schedlab {

struct Processor;  // processor.hpp

// The monitor's timing, Go's values (runtime/proc.go sysmon and retake). A test may change them.
struct SysmonTiming {
  std::uint32_t first_sleep_us = 20;      // Go: "start with 20us sleep"
  std::uint32_t max_sleep_us = 10'000;    // Go: "up to 10ms"
  std::uint32_t idle_rounds = 50;         // Go: "start doubling the sleep after 1ms" (50 rounds of 20 µs)
  // Go's retake leaves a P in its call while nothing is queued on it and some M spins or some P
  // is idle (they would take any new work), but not longer than 10 ms.
  std::uint64_t keep_while_others_look_ns = 10'000'000;
  // --preempt safepoint: mark tasks that hold their P for 10 ms (runtime/preemption.hpp), and
  // keep the rounds going while any P is busy. Not a timing, but the monitor's to know.
  bool preempt = false;
};

class SystemMonitor {
 public:
  // What the monitor needs from the policy that owns it.
  class Host {
   public:
    // Some M is spinning or some P is idle (Go: nmspinning + npidle > 0). Any thread.
    virtual bool someone_looking() const = 0;
    // The monitor took `p` back from a thread in a call (its status is `held` now, and only
    // the caller holds it): give it to another M or the idle list (Go's handoffp).
    virtual void handoff_retaken(Processor& p) = 0;
    // Go's sysmon: "poll network if not polled for more than 10ms", its tasks to the global
    // queue. Called each round with the round's time. Returns network_waiting() after the poll.
    virtual bool netpoll(std::uint64_t now) = 0;
    // Tasks wait on sockets and no M is blocked in the poller: the monitor keeps its rounds
    // (the poll above is then the one that sees a ready socket while every P runs). Any thread;
    // seq_cst reads, for sleep_deeply()'s recheck against note_network_wait().
    virtual bool network_waiting() const = 0;
    // Some P is not idle (Go: npidle < gomaxprocs): with preemption the monitor keeps its
    // rounds. seq_cst, for sleep_deeply()'s recheck against note_busy().
    virtual bool any_busy() const = 0;

   protected:
    ~Host() = default;
  };

  SystemMonitor(Host& host, const std::vector<std::unique_ptr<Processor>>& procs, SysmonTiming timing);
  ~SystemMonitor();
  SystemMonitor(const SystemMonitor&) = delete;
  SystemMonitor& operator=(const SystemMonitor&) = delete;

  // Starts the monitor's thread, in its deep sleep. Once.
  void start();
  // Stops and joins the thread; idempotent. No round runs after it returns.
  void stop() noexcept;

  // Executed by the thread that has just marked a P `in_call` with a seq_cst store: wakes the
  // monitor if it sleeps deeply (Go's entersyscall_sysmon). With sleep_deeply(), a store-load
  // pair on each side, both seq_cst (Go's atomic.Store of the P's status is an XCHG too): either
  // the monitor sees the P in its call, or the caller sees the monitor asleep and wakes it. The
  // XCHG costs ~20 cycles, next to a system call's hundreds.
  void note_call_entered() noexcept {
    if (state_.load(std::memory_order_seq_cst) == kDeepSleep) [[unlikely]] wake();
  }
  // The same for a thread that has seen, with a seq_cst read, tasks waiting on sockets with no
  // M in the poller: the monitor's deep sleep rechecks network_waiting() the same way.
  void note_network_wait() noexcept { note_call_entered(); }
  // The same for the thread that has just taken the first P off the idle list (a seq_cst
  // decrement of the idle count): with preemption the monitor watches busy Ps. It wakes into
  // its 10 ms rounds, not the 20 µs bet a call earns (Go resets the backoff only for a call).
  void note_busy() noexcept {
    if (state_.load(std::memory_order_seq_cst) == kDeepSleep) [[unlikely]] wake(/*busy=*/true);
  }

  // Counters, read racily by any thread.
  std::uint64_t retakes() const noexcept { return retakes_.load(std::memory_order_relaxed); }
  std::uint64_t wakeups() const noexcept { return wakeups_.load(std::memory_order_relaxed); }
  // CPU time (user + system) the monitor's thread has used so far.
  std::uint64_t cpu_ns() const;

 private:
  // kWokenBusy: woken from a deep sleep by note_busy (the monitor sets it back to kTicking).
  static constexpr std::uint32_t kTicking = 0, kDeepSleep = 1, kStopping = 2, kWokenBusy = 3;
  // timed_out: a round's sleep ended, or a deep sleep did not begin; slept_round: a bounded deep
  // sleep lasted a round; woken: by a call or a network wait; woken_busy: by note_busy.
  enum class Sleep { timed_out, slept_round, woken, woken_busy, stopping };

  // Executed by the monitor's thread only (as are the functions below).
  void loop();
  // One round of duties (Go's sysmon loop body after its sleep). Returns whether it took a P
  // back (which resets the backoff); *in_call: Ps found in a call and left there; *net: tasks
  // wait on sockets with no M blocked in the poller; *busy: some P is held (with preemption).
  bool tick(std::uint64_t now, unsigned* in_call, bool* net, bool* busy);
  // Go's retake: Ps in blocking calls (how many it took back), and with preemption the marks
  // on Ps whose slice has lasted 10 ms (*busy: some P is held).
  unsigned retake(std::uint64_t now, unsigned* in_call, bool* busy);
  // Sleeps until the next round or a stop.
  Sleep sleep_between_rounds(std::uint32_t us);
  // Says it sleeps, and sleeps unless a P is in a call after all (timed_out then means "did not
  // sleep"); woken: a thread entering a call woke it. bounded: at most one 10 ms round
  // (slept_round), for preemption while a P is busy.
  Sleep sleep_deeply(bool bounded);
  void wake(bool busy = false) noexcept;  // any thread

  // What the monitor remembers of each P between rounds (Go's p.sysmontick); monitor only.
  struct Seen {
    std::uint32_t syscalltick = 0;
    std::uint64_t since_ns = 0;  // when it first saw that call
    SliceWatch slice;            // its time slice (schedtick), for preemption
  };

  Host& host_;
  const std::vector<std::unique_ptr<Processor>>& procs_;
  const SysmonTiming timing_;
  std::vector<Seen> seen_;
  // kTicking, kDeepSleep or kStopping; the monitor sleeps on it with a futex.
  std::atomic<std::uint32_t> state_{kTicking};
  std::atomic<std::uint64_t> retakes_{0};
  std::atomic<bool> busy_wake_{false};  // the last wake from a deep sleep was note_busy's
  PendingMarks pending_;                // monitor only
  std::atomic<std::uint64_t> wakeups_{0};
  mutable std::mutex thread_mutex_;  // guards thread_'s life against cpu_ns()
  std::thread thread_;
  clockid_t cpu_clock_{};
  // The thread's CPU time when it stopped: written by the thread as it leaves, read after the join.
  std::uint64_t final_cpu_ns_ = 0;
};

}  // namespace schedlab
