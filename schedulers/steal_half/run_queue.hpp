// run_queue.hpp: steal-half's per-processor run queue (Go's p.runq).
//
// A bounded ring of task pointers with one owner and any number of thieves:
//   - the owner pushes at the tail, and pops at the tail (LIFO, the default) or the head (FIFO);
//   - a thief takes a batch (half, rounded up, by default) from the head, straight into its own
//     queue, in one atomic step.
//
// Why not Go's layout. Go's runq has a head that consumers CAS and a tail that only the owner
// stores, and the owner also consumes at the head (FIFO, plus a one-slot `runnext`). A LIFO owner
// popping at the tail while thieves take batches from the head breaks that scheme: a thief that
// read the tail, then stalled, can claim slots the owner has popped since (Chase-Lev avoids it
// only for single-item steals; with batches, the owner's later pops eat into a claim the thief
// has computed but not yet committed). So every consumer, the owner's pops included, commits
// with a CAS on one word that holds the head and a version:
//
//     top_  = head (bits 31..0) | version (bits 63..32)    consumers CAS it; every owner pop
//                                                          bumps the version, so a thief's CAS
//                                                          prepared before any pop fails
//     tail_ = tail                                         only the owner writes it
//
// A push writes its slot and then the tail, with plain stores: thieves do not CAS the tail, so
// nothing can be lost, and a push needs no locked instruction. A LIFO pop lowers the tail first
// and then CASes top_ with a new version; a thief reads top_ before the tail and commits with a
// CAS on top_. Either the pop's CAS comes first, and every thief CAS prepared against the old
// version fails; or a thief's CAS comes first, the pop's CAS fails, and the pop rereads the head:
// a thief that read the tail before it was lowered may have claimed the popped slot (always, for
// StealAmount::all; for half and one only when it was the last task), which the pop sees as the
// head having passed its slot. A thief copies the victim's slots before its CAS; the CAS succeeds
// only if no consumer committed in between, so what it copied is exactly what it took. Indices are
// 32-bit counters taken modulo the capacity, a power of two no larger than 2^14.
//
// Cost: a push is two plain stores; a pop, a steal and an overflow one CAS each, uncontended in
// the common case (each processor works on its own queue); thieves touch a victim's lines only
// when they are idle.
//
// Memory order for the spinning protocol. Go's submitter pushes and then reads nmspinning, and
// relies on a store-load barrier between the two (Go's StoreRel of the tail is an XCHG on
// amd64). A plain push gives no such barrier, so steal-half puts it on the other side: a spinner
// that gives up issues a process-wide barrier (membarrier, steal_half.cpp) before it looks at the
// queues again. Where membarrier is unavailable, the queue is built `fenced` and a push ends with
// a seq_cst store, the barrier Go has.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "../assert.hpp"
#include "../runtime/policy.hpp"
#include "../task.hpp"

namespace schedlab {

// How much a thief takes from a victim holding n tasks.
enum class StealAmount {
  half,  // n - n/2, Go's runqgrab: after one steal thief and victim hold about n/2 each
  one,   // a single task, as classic Chase-Lev deques do
  all,   // everything (an ablation: the victim is left empty)
  none,  // nothing, ever (the ablation of the stealing claims): a thief never looks, so work
         // moves between Ps only through the global queue; steal_from never sees it
};

class LocalRunQueue {
 public:
  // Half a queue must hold at least one task (overflow and the global batch move half).
  static constexpr std::uint32_t kMinCapacity = 2;
  // Bounded well inside the 32-bit indices, and the largest queue anyone asked for by far.
  static constexpr std::uint32_t kMaxCapacity = 1u << 14;

  // `capacity` if a queue can have it; otherwise throws std::invalid_argument naming the value
  // and the sizes to use. The constructor's check, public so that a configuration can be
  // refused before anything is built.
  static std::uint32_t validated(std::uint32_t capacity) {
    if (capacity < kMinCapacity || capacity > kMaxCapacity || (capacity & (capacity - 1)) != 0) {
      const std::string lo = std::to_string(kMinCapacity), hi = std::to_string(kMaxCapacity);
      throw std::invalid_argument("run queue capacity " + std::to_string(capacity) +
                                  " is not a power of two from " + lo + " to " + hi + "; use " +
                                  lo + ", " + std::to_string(2 * kMinCapacity) + ", ... " + hi);
    }
    return capacity;
  }

  // `fenced`: every push ends with a store-load barrier (see above; steal_half.cpp decides).
  explicit LocalRunQueue(std::uint32_t capacity, bool fenced = false)
      : capacity_(validated(capacity)), mask_(capacity - 1), fenced_(fenced),
        slots_(new std::atomic<Task*>[capacity]) {
    for (std::uint32_t i = 0; i < capacity; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
  }

  std::uint32_t capacity() const noexcept { return capacity_; }

  // Tasks in the queue at some recent instant (exact when called by the owner with no thieves).
  std::uint32_t size() const noexcept {
    const std::uint64_t top = top_.load(std::memory_order_acquire);
    return count(head(top), tail_.load(std::memory_order_acquire));
  }
  bool empty() const noexcept { return size() == 0; }

  // Owner only. Appends t at the tail; false when the queue is full (the caller overflows).
  bool push(Task& t) noexcept {
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    // head may be stale (consumers advance it), which only makes the queue look fuller.
    if (count(head(top_.load(std::memory_order_relaxed)), tail) >= capacity_) return false;
    slots_[tail & mask_].store(&t, std::memory_order_relaxed);
    publish_tail(tail + 1);
    return true;
  }

  // Owner only. The newest task (LIFO) or the oldest (FIFO); nullptr when empty.
  Task* pop(LocalOrder order) noexcept { return order == LocalOrder::lifo ? pop_tail() : pop_head(); }

  // Owner only, when push() failed. Removes the older half of a full queue into out[] (which
  // has room for capacity()/2) and returns how many; 0 if a thief made room meanwhile (retry
  // the push). Go's runqputslow.
  std::uint32_t take_older_half(Task** out) noexcept {
    std::uint64_t top = top_.load(std::memory_order_acquire);
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint32_t n = count(head(top), tail);
    if (n < capacity_) return 0;
    const std::uint32_t half = n / 2;
    for (std::uint32_t i = 0; i < half; ++i) {
      out[i] = slots_[(head(top) + i) & mask_].load(std::memory_order_relaxed);
    }
    if (!top_.compare_exchange_strong(top, pack(head(top) + half, version(top) + 1),
                                      std::memory_order_acq_rel)) {
      return 0;
    }
    return half;
  }

  // Called by the owner of *this* (the thief), whose queue must be empty. Takes a batch from the
  // head of `victim` and returns one of the stolen tasks to run now, or nullptr if the victim had
  // none; the others go into this queue in the victim's order. *moved is set to the batch size.
  // Go's runqsteal.
  //
  // Which stolen task runs now: the one that `order` (the thief's own pops) would otherwise reach
  // last, so that no stolen task waits behind the whole batch. FIFO (Go's order): the newest, as
  // runqsteal does. LIFO: the oldest. A LIFO thief that ran the newest first would run the
  // batch newest to oldest, and the oldest task, the one thieves take because it is most likely
  // the largest, would start last: with one long task spawned first (loops one-long), the thief
  // ran it after 99 short ones while its victim ran dry, and steal-half idled as much as fair.
  Task* steal_from(LocalRunQueue& victim, StealAmount amount, LocalOrder order,
                   std::uint32_t* moved) noexcept {
    const std::uint32_t mine = tail_.load(std::memory_order_relaxed);
    // The batch is written from our tail on, over slots an unfinished queue would still need.
    SCHEDLAB_ASSERT(count(head(top_.load(std::memory_order_relaxed)), mine) == 0,
                    "a thief steals only into its own empty queue");
    SCHEDLAB_ASSERT(amount != StealAmount::none, "a thief that takes nothing never calls steal_from");
    std::uint64_t top = victim.top_.load(std::memory_order_acquire);
    std::uint32_t k = 0;
    Task* run_now = nullptr;
    for (;;) {
      // After top_: a tail read before it could predate a pop that top_ already shows.
      const std::uint32_t n = victim.count(head(top), victim.tail_.load(std::memory_order_acquire));
      if (n == 0) {
        *moved = 0;
        return nullptr;
      }
      k = amount == StealAmount::half ? n - n / 2 : amount == StealAmount::one ? 1 : n;
      if (k > capacity_) k = capacity_;  // a smaller thief queue than the victim's
      const std::uint32_t run_index = order == LocalOrder::lifo ? 0 : k - 1;
      for (std::uint32_t i = 0, queued = 0; i < k; ++i) {
        Task* t = victim.slots_[(head(top) + i) & victim.mask_].load(std::memory_order_relaxed);
        if (i == run_index) {
          run_now = t;
        } else {
          slots_[(mine + queued++) & mask_].store(t, std::memory_order_relaxed);
        }
      }
      if (victim.top_.compare_exchange_weak(top, pack(head(top) + k, version(top)),
                                            std::memory_order_acq_rel, std::memory_order_acquire)) {
        break;
      }
    }
    *moved = k;
    if (k > 1) publish_tail(mine + k - 1);
    return run_now;
  }

 private:
  static std::uint32_t head(std::uint64_t top) noexcept { return static_cast<std::uint32_t>(top); }
  static std::uint32_t version(std::uint64_t top) noexcept { return static_cast<std::uint32_t>(top >> 32); }
  static std::uint64_t pack(std::uint32_t head, std::uint32_t version) noexcept {
    return (static_cast<std::uint64_t>(version) << 32) | head;
  }
  // Tasks between head and tail of *this* queue. A reader that is not the owner may pair a head
  // with a tail from another instant, and a LIFO pop that lost its last task to a thief lowers
  // the tail below the head until it repairs it: either reads as empty, never as a count near
  // 2^32. Every pair the owner reads holds at most capacity_ tasks.
  std::uint32_t count(std::uint32_t head, std::uint32_t tail) const noexcept {
    const auto n = static_cast<std::int32_t>(tail - head);
    if (n <= 0) return 0;
    return static_cast<std::uint32_t>(n) > capacity_ ? capacity_ : static_cast<std::uint32_t>(n);
  }

  // The owner's store of a new tail, publishing the slots below it to thieves (release), and
  // the store half of the spinning protocol's store-load pair (see the top of this file): with
  // `fenced_` the store itself is the barrier; without, a compiler-only fence keeps the caller's
  // next load (of nmspinning) after the store in program order, and the spinner's membarrier(2)
  // supplies the hardware barrier. A compiler fence emits no instruction.
  void publish_tail(std::uint32_t tail) noexcept {
    if (fenced_) {
      tail_.store(tail, std::memory_order_seq_cst);
    } else {
      tail_.store(tail, std::memory_order_release);
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
  }

  Task* pop_tail() noexcept {
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    std::uint64_t top = top_.load(std::memory_order_acquire);
    if (count(head(top), tail) == 0) return nullptr;
    const std::uint32_t slot = tail - 1;
    // Lower the tail first: a thief that reads top_ after our CAS reads this tail too.
    tail_.store(slot, std::memory_order_relaxed);
    for (;;) {
      if (static_cast<std::int32_t>(slot - head(top)) < 0) {
        // A thief that read the old tail claimed our slot: the queue is empty; put the tail back
        // at the head, where every consumer has left it.
        tail_.store(head(top), std::memory_order_relaxed);
        return nullptr;
      }
      Task* t = slots_[slot & mask_].load(std::memory_order_relaxed);
      if (top_.compare_exchange_weak(top, pack(head(top), version(top) + 1), std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
        return t;
      }
    }
  }

  Task* pop_head() noexcept {
    std::uint64_t top = top_.load(std::memory_order_acquire);
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    for (;;) {
      if (count(head(top), tail) == 0) return nullptr;
      Task* t = slots_[head(top) & mask_].load(std::memory_order_relaxed);
      if (top_.compare_exchange_weak(top, pack(head(top) + 1, version(top) + 1), std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
        return t;
      }
    }
  }

  const std::uint32_t capacity_;
  const std::uint32_t mask_;
  const bool fenced_;
  std::unique_ptr<std::atomic<Task*>[]> slots_;
  alignas(64) std::atomic<std::uint64_t> top_{0};
  alignas(64) std::atomic<std::uint32_t> tail_{0};
};

}  // namespace schedlab
