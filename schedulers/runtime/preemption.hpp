// preemption.hpp: preemption at safe points (--preempt safepoint), the rule every fiber
// scheduler's monitor applies: Go's sysmon retake(), its preemption half.
//
// A processor's time slice is identified by a tick that advances whenever the processor starts
// a task on a slice of its own (Go's p.schedtick; under steal-half a task taken from runnext
// inherits its readier's slice, Go's inheritTime, so a ping-pong pair shares one). A monitor
// looks at every busy processor once per round; one whose tick has not moved for 10 ms
// (forcePreemptNS) gets a preemption mark for that tick, and the task running there yields at
// its next safe point (safepoint.hpp) to the back of the queue (Go's gopreempt_m). A mark is for
// one tick: once the processor's tick moves on (the task yielded, parked or ended), it is stale
// and nobody acts on it.
//
// steal-half's system monitor (steal_half/sysmon.hpp) does this for its Ps beside its other
// duties, as Go's sysmon does; for fair, central and random-push the runtime starts a
// PreemptMonitor that does only this, for its workers (each holds its processor for life). Both
// keep looking every 10 ms while any processor is busy, and sleep without a timeout while every
// one is idle: what that costs is in the sysmon_wakeups and sysmon_cpu_ns columns (docs/schedulers.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "../safepoint.hpp"

namespace schedlab {

class FiberRuntime;

// Go: forcePreemptNS, "the time slice given to a G before it is preempted".
inline constexpr std::uint64_t kForcePreemptNs = 10'000'000;
// The tick a processor has when no mark is out (a tick would have to wrap 2^32 times to meet it).
inline constexpr std::uint32_t kNoPreemptMark = UINT32_MAX;

// What a monitor remembers of one processor's time slice between its rounds (Go's
// p.sysmontick.schedtick and schedwhen). Monitor only.
struct SliceWatch {
  std::uint32_t tick = 0;
  std::uint64_t since_ns = 0;
  bool seen = false;

  // Whether the slice `tick` has lasted kForcePreemptNs by `now` (Go's retake:
  // pd.schedwhen + forcePreemptNS <= now); a new tick starts a new watch.
  bool overdue(std::uint32_t now_tick, std::uint64_t now) noexcept {
    if (!seen || now_tick != tick) {
      tick = now_tick;
      since_ns = now;
      seen = true;
      return false;
    }
    return now - since_ns >= kForcePreemptNs;
  }
  void forget() noexcept { seen = false; }  // the processor went idle
};

// One monitor's share of the process-wide "a mark is out" word every safe point reads
// (detail::g_preempt_pending): counted once while the monitor has any live mark.
class PendingMarks {
 public:
  ~PendingMarks() { set(false); }
  void set(bool any) noexcept {
    if (any == mine_) return;
    mine_ = any;
    if (any) {
      detail::g_preempt_pending.fetch_add(1, std::memory_order_relaxed);
    } else {
      detail::g_preempt_pending.fetch_sub(1, std::memory_order_relaxed);
    }
  }

 private:
  bool mine_ = false;
};

// The preemption monitor of a runtime whose policy has none of its own (fair, central,
// random-push): one thread holding no processor, whose rounds follow Go's rule above for each
// worker (a processor for life), its tick Worker::slices.
class PreemptMonitor {
 public:
  explicit PreemptMonitor(FiberRuntime& runtime);
  ~PreemptMonitor();
  PreemptMonitor(const PreemptMonitor&) = delete;
  PreemptMonitor& operator=(const PreemptMonitor&) = delete;

  // Starts its thread, asleep until the first run. Once.
  void start();
  // Stops and joins it; idempotent.
  void stop() noexcept;
  // A run has started (the harness thread, having submitted the root): look every 10 ms again.
  void note_run_started() noexcept;

  std::uint64_t rounds() const noexcept { return rounds_.load(std::memory_order_relaxed); }
  std::uint64_t cpu_ns() const;

 private:
  static constexpr std::uint32_t kTicking = 0, kDeepSleep = 1, kStopping = 2;
  void loop();
  // One round: marks the overdue workers; returns whether any worker was busy.
  bool round(std::uint64_t now);

  FiberRuntime& runtime_;
  std::vector<SliceWatch> watch_;  // per worker; monitor only
  PendingMarks pending_;           // monitor only
  std::atomic<std::uint32_t> state_{kDeepSleep};
  std::atomic<std::uint64_t> rounds_{0};
  mutable std::mutex thread_mutex_;  // guards thread_'s life against cpu_ns()
  std::thread thread_;
  std::uint64_t final_cpu_ns_ = 0;   // written by the thread as it leaves, read after the join
  pthread_t handle_{};
};

}  // namespace schedlab
