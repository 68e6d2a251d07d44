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
// only for single-item steals). Here head, tail and a version live in one 64-bit word, and every
// consumer, the owner included, commits with a CAS on the whole word:
//
//     bits 63..48  tail     (only the owner advances it; a push is a fetch_add, no CAS)
//     bits 47..16  version  (the owner bumps it on every pop, so pop-then-push never recreates
//                            a word a stalled thief still holds: no ABA)
//     bits 15..0   head     (advanced by FIFO pops, steals and overflow)
//
// A thief copies the victim's slots before its CAS; the CAS succeeds only if nothing changed in
// between, so what it copied is exactly what it took. Indices are 16-bit counters taken modulo
// the capacity, which is therefore a power of two no larger than 2^14.
//
// Cost: one locked instruction per push and per pop, uncontended in the common case (each
// processor works on its own queue); thieves touch a victim's line only when they are idle.
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
};

class LocalRunQueue {
 public:
  // Half a queue must hold at least one task (overflow and the global batch move half).
  static constexpr std::uint32_t kMinCapacity = 2;
  // 16-bit indices taken modulo the capacity: the distance between head and tail must stay
  // representable while thieves lag behind.
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

  explicit LocalRunQueue(std::uint32_t capacity)
      : capacity_(validated(capacity)), mask_(capacity - 1), slots_(new std::atomic<Task*>[capacity]) {
    for (std::uint32_t i = 0; i < capacity; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
  }

  std::uint32_t capacity() const noexcept { return capacity_; }

  // Tasks in the queue at some recent instant (exact when called by the owner with no thieves).
  std::uint32_t size() const noexcept { return count(word_.load(std::memory_order_acquire)); }
  bool empty() const noexcept { return size() == 0; }

  // Owner only. Appends t at the tail; false when the queue is full (the caller overflows).
  bool push(Task& t) noexcept {
    const std::uint64_t w = word_.load(std::memory_order_relaxed);
    // head may be stale (thieves advance it), which only makes the queue look fuller.
    if (count(w) >= capacity_) return false;
    slots_[tail(w) & mask_].store(&t, std::memory_order_relaxed);
    // seq_cst: the spinning protocol needs this push ordered before the pusher's later load of
    // the spinning count (a store-load pair; see steal_half.cpp).
    word_.fetch_add(kTailOne, std::memory_order_seq_cst);
    return true;
  }

  // Owner only. The newest task (LIFO) or the oldest (FIFO); nullptr when empty.
  Task* pop(LocalOrder order) noexcept {
    std::uint64_t w = word_.load(std::memory_order_acquire);
    for (;;) {
      if (count(w) == 0) return nullptr;
      std::uint64_t next;
      Task* t;
      if (order == LocalOrder::lifo) {
        t = slots_[(tail(w) - 1) & mask_].load(std::memory_order_relaxed);
        next = pack(head(w), version(w) + 1, tail(w) - 1);
      } else {
        t = slots_[head(w) & mask_].load(std::memory_order_relaxed);
        next = pack(head(w) + 1, version(w) + 1, tail(w));
      }
      if (word_.compare_exchange_weak(w, next, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return t;
      }
    }
  }

  // Owner only, when push() failed. Removes the older half of a full queue into out[] (which
  // has room for capacity()/2) and returns how many; 0 if a thief made room meanwhile (retry
  // the push). Go's runqputslow.
  std::uint32_t take_older_half(Task** out) noexcept {
    std::uint64_t w = word_.load(std::memory_order_acquire);
    const std::uint32_t n = count(w);
    if (n < capacity_) return 0;
    const std::uint32_t half = n / 2;
    for (std::uint32_t i = 0; i < half; ++i) {
      out[i] = slots_[(head(w) + i) & mask_].load(std::memory_order_relaxed);
    }
    const std::uint64_t next = pack(head(w) + half, version(w) + 1, tail(w));
    if (!word_.compare_exchange_strong(w, next, std::memory_order_acq_rel)) return 0;
    return half;
  }

  // Called by the owner of *this* (the thief), whose queue must be empty. Takes a batch from the
  // head of `victim` into this queue and returns one of the stolen tasks to run now (the newest
  // of the batch; the others stay queued here), or nullptr if the victim had none. *moved is
  // set to the batch size. Go's runqsteal.
  Task* steal_from(LocalRunQueue& victim, StealAmount amount, std::uint32_t* moved) noexcept {
    const std::uint64_t mine = word_.load(std::memory_order_relaxed);
    // The batch is written from our tail on, over slots an unfinished queue would still need.
    SCHEDLAB_ASSERT(count(mine) == 0, "a thief steals only into its own empty queue");
    std::uint64_t w = victim.word_.load(std::memory_order_acquire);
    std::uint32_t k = 0;
    for (;;) {
      const std::uint32_t n = victim.count(w);
      if (n == 0) {
        *moved = 0;
        return nullptr;
      }
      k = amount == StealAmount::half ? n - n / 2 : amount == StealAmount::one ? 1 : n;
      if (k > capacity_) k = capacity_;  // a smaller thief queue than the victim's
      for (std::uint32_t i = 0; i < k; ++i) {
        slots_[(tail(mine) + i) & mask_].store(
            victim.slots_[(head(w) + i) & victim.mask_].load(std::memory_order_relaxed),
            std::memory_order_relaxed);
      }
      const std::uint64_t next = pack(head(w) + k, version(w), tail(w));
      if (victim.word_.compare_exchange_weak(w, next, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
        break;
      }
    }
    *moved = k;
    Task* run_now = slots_[(tail(mine) + k - 1) & mask_].load(std::memory_order_relaxed);
    if (k > 1) word_.fetch_add(static_cast<std::uint64_t>(k - 1) << 48, std::memory_order_seq_cst);
    return run_now;
  }

 private:
  static constexpr std::uint64_t kTailOne = std::uint64_t{1} << 48;

  static std::uint32_t head(std::uint64_t w) noexcept { return static_cast<std::uint16_t>(w); }
  static std::uint32_t tail(std::uint64_t w) noexcept { return static_cast<std::uint16_t>(w >> 48); }
  static std::uint32_t version(std::uint64_t w) noexcept { return static_cast<std::uint32_t>(w >> 16); }
  // Tasks between head and tail of a word of *this* queue. Every word it ever holds has head at
  // or behind tail and at most capacity_ tasks between them; a head that passed its tail would
  // read as a count near 2^16.
  std::uint32_t count(std::uint64_t w) const noexcept {
    const std::uint32_t n = static_cast<std::uint16_t>(tail(w) - head(w));
    SCHEDLAB_ASSERT(n <= capacity_, "a run queue's head never passes its tail, nor holds more than its slots");
    return n;
  }
  static std::uint64_t pack(std::uint32_t h, std::uint32_t v, std::uint32_t t) noexcept {
    return (static_cast<std::uint64_t>(static_cast<std::uint16_t>(t)) << 48) |
           (static_cast<std::uint64_t>(v) << 16) | static_cast<std::uint16_t>(h);
  }

  const std::uint32_t capacity_;
  const std::uint32_t mask_;
  std::unique_ptr<std::atomic<Task*>[]> slots_;
  alignas(64) std::atomic<std::uint64_t> word_{0};
};

}  // namespace schedlab
