// runnext.hpp: Go's runnext, the one-slot LIFO in front of a P's run queue, which a thief may
// take as a last resort.
//
// A task spawned or readied by the task running on a P goes into its P's runnext; the task it
// displaces goes into the run queue (run_queue.hpp). The owner takes runnext before its queue.
// Go lets a thief take runnext too, on its last pass over the victims and only when the victim's
// queue is empty (runqgrab), so that a task readied just before its readier blocked or ran long
// does not wait for it. For that Go pays a CAS on every put and every take of runnext, on the
// owner's hottest path (runqput, runqget). Thieves take runnext rarely, so this slot makes the
// owner's side plain stores and loads and has the thief pay instead:
//
//   slot_    the task; the owner stores any value, a thief only CASes a task to nullptr
//   thief_   free | stealing (a thief is at work) | took (a thief took stolen_, and the owner
//            has not yet looked); a thief claims it free -> stealing, so one works at a time
//   stolen_  what the last thief took, for the owner to compare with what it held
//
// Owner (put, take): read the slot, store the new value, then read thief_. free: done; nothing
// a thief does can now take the task the owner holds (below). Otherwise wait until no thief is
// at work, and if the last one took exactly the task the owner removed or displaced, the owner
// lost it (the thief runs it); then mark thief_ free again.
//
// Thief (steal): claim thief_, make every thread of the process execute a barrier
// (process_barrier.hpp), CAS the slot from the task it saw to nullptr, publish the outcome.
//
// Why the owner cannot run a task a thief took. Say the thief's CAS took task X, so the CAS read
// X as the slot's latest value, and the owner read X too and then stored over it (a take's
// nullptr, or a put's new task). The owner's store comes after the CAS in the slot's order of
// modifications, or the CAS would have read it. Had that store preceded, in the owner's program,
// the barrier the thief forced on it, the store would have been visible before the thief's
// barrier call returned, that is before the CAS: so it follows that barrier point, and so does
// the owner's read of thief_ after it, which therefore sees the flag the thief raised before its
// call. The owner then waits for the outcome and finds X in stolen_. If instead the thief took a
// task the owner put afterwards (the owner's store preceded the CAS), the owner never held it.
//
// Cost to the owner: one more load of a line it owns, and a branch, per put and per take; the
// thief pays a membarrier (microseconds) per attempt. Where membarrier is unavailable, nobody
// may call steal() (the policy then keeps runnext its owner's alone, as --steal-runnext off):
// the owner's side has no barrier to fall back on, and giving it one would tax every task.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "../cpu_relax.hpp"
#include "../task.hpp"
#include "process_barrier.hpp"

namespace schedlab {

// What the owner does between reading the slot and writing it: nothing, except in the stress
// test (tests/stress: RunNextStress), which stalls there to make a thief's CAS land in that
// window, the only one in which a thief can race with the owner.
struct NoStall {
  void operator()() noexcept {}
};

template <class Stall = NoStall>
class BasicRunNext {
 public:
  BasicRunNext() = default;
  explicit BasicRunNext(Stall stall) : stall_(stall) {}
  BasicRunNext(const BasicRunNext&) = delete;
  BasicRunNext& operator=(const BasicRunNext&) = delete;

  // Executed only by the M holding the P. t becomes runnext; returns the task it displaced, to
  // be queued by the caller (nullptr: the slot was empty, or a thief took the displaced task).
  Task* put(Task& t) noexcept {
    Task* old = slot_.load(std::memory_order_relaxed);  // only a thief's nullptr can have changed it
    stall_();
    store(&t);
    if (thief_active()) [[unlikely]] return settle(old);
    return old;
  }

  // Executed only by the M holding the P. Removes and returns runnext; nullptr if it is empty
  // or a thief took it.
  Task* take() noexcept {
    Task* t = take_or_mark();
    return marked(t) ? settle(unmarked(t)) : t;
  }

  // take() for the owner's hottest path, which must not keep registers alive across a call to
  // settle(): the removed task, marked (its low bit set) when a thief is or was at work, in which
  // case the caller passes it to settle() and uses what that returns.
  Task* take_or_mark() noexcept {
    Task* t = slot_.load(std::memory_order_relaxed);
    if (t == nullptr) return nullptr;
    stall_();
    store(nullptr);
    if (thief_active()) [[unlikely]] return mark(t);
    return t;
  }
  static bool marked(const Task* t) noexcept { return (reinterpret_cast<std::uintptr_t>(t) & 1) != 0; }
  static Task* unmarked(Task* t) noexcept {
    return reinterpret_cast<Task*>(reinterpret_cast<std::uintptr_t>(t) & ~std::uintptr_t{1});
  }

  // The owner, after storing over `mine` (the task it removed or displaced) while a thief was
  // or had been at work: waits until no thief is at work, then returns `mine` unless the last
  // thief took it. A thief's work is a membarrier and a CAS; the owner waits that long, yielding
  // if the thief's thread was preempted in between.
  [[gnu::noinline]] Task* settle(Task* mine) noexcept {
    std::uint32_t f;
    for (unsigned spins = 0; (f = thief_.load(std::memory_order_acquire)) == kStealing; ++spins) {
      if (spins < 128) {
        cpu_relax();
      } else {
        std::this_thread::yield();
      }
    }
    if (f == kTook) {
      Task* took = stolen_.load(std::memory_order_relaxed);
      thief_.store(kFree, std::memory_order_release);
      if (took == mine) return nullptr;
    }
    return mine;
  }

  // Any thread: the task in the slot at some recent instant (a hint: it may be gone already).
  Task* peek() const noexcept { return slot_.load(std::memory_order_acquire); }

  // A thief (an M holding another P): takes `seen`, a task it read with peek(), if it is still
  // in the slot; nullptr if the owner took or replaced it, or another thief is at work on this
  // slot (or its outcome is still unread). Go's runqgrab, runnext branch. Only where
  // process_barrier_available().
  Task* steal(Task* seen) noexcept {
    std::uint32_t expected = kFree;
    if (!thief_.compare_exchange_strong(expected, kStealing, std::memory_order_seq_cst)) return nullptr;
    process_barrier();
    Task* t = seen;
    if (slot_.compare_exchange_strong(t, nullptr, std::memory_order_seq_cst)) {
      stolen_.store(seen, std::memory_order_relaxed);
      thief_.store(kTook, std::memory_order_release);  // publishes stolen_
      return seen;
    }
    thief_.store(kFree, std::memory_order_release);
    return nullptr;
  }

 private:
  static constexpr std::uint32_t kFree = 0, kStealing = 1, kTook = 2;

  void store(Task* t) noexcept {
    slot_.store(t, std::memory_order_release);  // publishes the task to a thief that takes it
    std::atomic_signal_fence(std::memory_order_seq_cst);  // keeps thief_active() after it
  }
  bool thief_active() const noexcept { return thief_.load(std::memory_order_relaxed) != kFree; }
  static Task* mark(Task* t) noexcept {
    static_assert(alignof(Task) >= 2, "a task's address has a free low bit");
    return reinterpret_cast<Task*>(reinterpret_cast<std::uintptr_t>(t) | 1);
  }


  [[no_unique_address]] Stall stall_;
  std::atomic<Task*> slot_{nullptr};
  std::atomic<std::uint32_t> thief_{kFree};
  std::atomic<Task*> stolen_{nullptr};  // written by the thief holding `stealing`, read by the owner on `took`
};

using RunNext = BasicRunNext<>;

}  // namespace schedlab
