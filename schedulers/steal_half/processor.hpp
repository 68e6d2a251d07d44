// processor.hpp: steal-half's P (Go's p): the right to run tasks, with its own queues.
//
// Shared by the policy (steal_half.cpp), which owns and moves Ps between threads, and the system
// monitor (sysmon.cpp), which watches the Ps whose thread is in a blocking call and takes them
// back (Go's retake). Who may touch what is said beside each field.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "../task.hpp"
#include "run_queue.hpp"
#include "runnext.hpp"

namespace schedlab {

// What a P is doing, as far as the system monitor and a thread coming back from a call care
// (Go's p.status, without the states of a garbage collector). An idle P (on the idle list) is
// `held` here: it is marked by Processor::idle.
enum class ProcStatus : std::uint32_t {
  held,     // held by an M (running tasks, or looking for some), or idle, or in transit
  in_call,  // its M is in a blocking call and kept it (Go's _Psyscall): whoever CASes it back to
            // `held` first owns it, the M on return or the monitor retaking it
};

struct alignas(64) Processor {
  Processor(std::uint32_t id_, std::uint32_t capacity, bool fenced)
      : id(id_), runq(capacity, fenced), overflow(capacity / 2),
        rng(0x9E3779B97F4A7C15ull * (id_ + 1)) {}

  const std::uint32_t id;
  LocalRunQueue runq;
  // Go's runnext: the newest runnable task, in front of runq. The owner's side is plain stores;
  // a thief may take it as a last resort (runnext.hpp).
  RunNext runnext;
  std::atomic<ProcStatus> status{ProcStatus::held};
  // Counts this P's blocking calls (Go's p.syscalltick): written by the M holding the P as it
  // enters a call, read by the monitor, which retakes the P only if it saw the same call twice.
  std::atomic<std::uint32_t> syscalltick{0};
  // Time slices started on this P (Go's p.schedtick: a task taken from runnext inherits its
  // readier's, inheritTime). Written by its owner only, read by the monitor (tick(), read_tick()).
  std::uint32_t schedtick = 0;
  std::uint32_t until_global_check = 0;  // ticks left before the next global-first look; owner only
  // The slice the monitor found running for 10 ms (Go's preemptone: gp.preempt), kNoPreemptMark
  // if none: the task running on this P yields at its next safe point while schedtick still
  // equals it (runtime/preemption.hpp).
  std::atomic<std::uint32_t> preempt_tick{UINT32_MAX};
  // The last task a channel or mutex ready put in runnext, for counting the ones thieves take
  // (ready_runnext_stolen). Written by the owner, read by thieves.
  std::atomic<Task*> last_woken{nullptr};
  std::atomic<bool> idle{false};  // on the idle list; thieves skip idle Ps without the lock
  Processor* idle_next = nullptr;  // idle list link; guarded by the sched lock
  std::vector<Task*> overflow;     // scratch for runqputslow; owner only
  std::uint64_t rng;               // victim order; owner only

  // Advances schedtick: one add to memory by its only writer, which the monitor reads as an
  // atomic (the same single-writer rule as WorkerStats::add, stats.hpp).
  void tick() noexcept {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
    asm("addl $1, %0" : "+m"(schedtick));
#else
    __atomic_store_n(&schedtick, __atomic_load_n(&schedtick, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
#endif
  }
  // schedtick, from any thread.
  std::uint32_t read_tick() const noexcept { return __atomic_load_n(&schedtick, __ATOMIC_RELAXED); }

  // Nothing queued on this P at some recent instant (Go's runqempty). Any thread.
  bool queues_empty() const noexcept { return runnext.peek() == nullptr && runq.empty(); }

  // xorshift64: victim order needs speed, not quality (Go uses its fastrand for the same).
  std::uint32_t random() noexcept {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return static_cast<std::uint32_t>(rng >> 32);
  }
};

}  // namespace schedlab
