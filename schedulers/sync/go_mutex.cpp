#include "go_mutex.hpp"

#include "../assert.hpp"
#include "../cpu_relax.hpp"
#include "../scheduler.hpp"
#include "../stats.hpp"

namespace schedlab {

namespace {
constexpr int kPausesPerSpin = 30;  // Go: active_spin_cnt (procyield(30))
}  // namespace

bool Semaphore::try_acquire() noexcept {
  std::uint32_t v = count_.load(std::memory_order_acquire);
  while (v != 0) {
    if (count_.compare_exchange_weak(v, v - 1, std::memory_order_acquire, std::memory_order_acquire)) return true;
  }
  return false;
}

// Executed by a task. Go's semacquire1.
void Semaphore::acquire(SyncObject& owner, Scheduler& s, bool lifo) {
  if (try_acquire()) return;
  Waiter me(WaitKind::lock, owner);
  for (;;) {
    lock_.lock();
    if (abandoned_) {
      lock_.unlock();
      throw_abandoned(owner, WaitKind::lock);
    }
    // Counted in before the last look: a release after that look sees us and dequeues.
    nwait_.fetch_add(1, std::memory_order_seq_cst);
    if (try_acquire()) {
      nwait_.fetch_sub(1, std::memory_order_relaxed);
      lock_.unlock();
      return;
    }
    me.success = false;
    if (lifo) {
      queue_.push_front(me);
    } else {
      queue_.push_back(me);
    }
    s.park(me, &RuntimeLock::unlock_fn, &lock_);
    if (me.abandoned) throw_abandoned(owner, WaitKind::lock);
    if (me.success || try_acquire()) return;  // the ticket: handed over in starvation mode
    lifo = true;  // woken and beaten to it: wait again at the front (Go re-queues the same way)
  }
}

// Go's semrelease1. Executed by a task (the unlocker).
void Semaphore::release(Scheduler& s, bool handoff) {
  count_.fetch_add(1, std::memory_order_seq_cst);
  // After the add: a waiter counted in before it looks again and takes the unit itself.
  if (nwait_.load(std::memory_order_seq_cst) == 0) return;
  lock_.lock();
  if (nwait_.load(std::memory_order_relaxed) == 0) {
    lock_.unlock();
    return;
  }
  Waiter* w = queue_.pop_front();
  if (w != nullptr) nwait_.fetch_sub(1, std::memory_order_relaxed);
  lock_.unlock();
  if (w == nullptr) return;
  if (handoff && try_acquire()) w->success = true;
  s.ready(*w);
}

std::size_t Semaphore::describe_waiters(std::string& out, const std::string& what) const {
  lock_.lock();
  std::size_t n = 0;
  for (const Waiter* w = queue_.front(); w != nullptr; w = w->next, ++n) append_waiter_line(out, *w, what);
  lock_.unlock();
  return n;
}

void Semaphore::abandon(std::vector<Waiter*>& out) {
  lock_.lock();
  abandoned_ = true;
  while (Waiter* w = queue_.pop_front()) {
    nwait_.fetch_sub(1, std::memory_order_relaxed);
    w->abandoned = true;
    out.push_back(w);
  }
  lock_.unlock();
}

bool GoMutex::try_lock() {
  std::int32_t old = state_.load(std::memory_order_relaxed);
  if ((old & (kLocked | kStarving)) != 0) return false;
  return state_.compare_exchange_strong(old, old | kLocked, std::memory_order_acquire, std::memory_order_relaxed);
}

// Go's (*Mutex).lockSlow, line for line.
void GoMutex::lock_slow() {
  std::uint64_t wait_start = 0;
  bool starving = false;
  bool awoke = false;
  int iter = 0;
  std::int32_t old = state_.load(std::memory_order_relaxed);
  for (;;) {
    // Spin while locked, not starving, and the scheduler allows it.
    if ((old & (kLocked | kStarving)) == kLocked && scheduler_.may_spin(iter)) {
      // Set the woken flag so that unlock wakes no one else while we spin.
      if (!awoke && (old & kWoken) == 0 && (old >> kWaiterShift) != 0 &&
          state_.compare_exchange_strong(old, old | kWoken, std::memory_order_relaxed)) {
        awoke = true;
      }
      for (int i = 0; i < kPausesPerSpin; ++i) cpu_relax();
      ++iter;
      old = state_.load(std::memory_order_relaxed);
      continue;
    }
    std::int32_t next = old;
    if ((old & kStarving) == 0) next |= kLocked;  // a starving mutex is never grabbed: newcomers queue
    if ((old & (kLocked | kStarving)) != 0) next += 1 << kWaiterShift;
    // Switch to starvation mode, if the mutex is still locked (an unlock expects waiters then).
    if (starving && (old & kLocked) != 0) next |= kStarving;
    if (awoke) {
      SCHEDLAB_ASSERT((next & kWoken) != 0, "sync: inconsistent mutex state (a woken waiter's flag)");
      next &= ~kWoken;
    }
    if (state_.compare_exchange_strong(old, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      if ((old & (kLocked | kStarving)) == 0) return;  // locked it with the CAS
      // Waited before: the front of the queue.
      const bool lifo = wait_start != 0;
      if (wait_start == 0) wait_start = now_ns();
      sema_.acquire(*this, scheduler_, lifo);
      starving = starving || now_ns() - wait_start > kStarvationThresholdNs;
      old = state_.load(std::memory_order_relaxed);
      if ((old & kStarving) != 0) {
        // Handed over in starvation mode: the mutex is ours, though the word says unlocked
        // with our waiter counted. Fix that up; leave starvation mode if we are the last
        // waiter or did not wait long.
        SCHEDLAB_ASSERT((old & (kLocked | kWoken)) == 0 && (old >> kWaiterShift) != 0,
                        "sync: inconsistent mutex state (a starvation-mode hand-off)");
        std::int32_t delta = kLocked - (1 << kWaiterShift);
        if (!starving || (old >> kWaiterShift) == 1) delta -= kStarving;
        state_.fetch_add(delta, std::memory_order_acquire);
        return;
      }
      awoke = true;
      iter = 0;
    }
    // else: the CAS failed and reloaded `old`
  }
}

// Go's (*Mutex).unlockSlow. `now` is the word after the unlock's add.
void GoMutex::unlock_slow(std::int32_t now) {
  if (((now + kLocked) & kLocked) == 0) throw std::logic_error("unlock of unlocked " + label());
  if ((now & kStarving) == 0) {
    std::int32_t old = now;
    for (;;) {
      // No waiters, or someone already woken, or the mutex taken again: nobody to wake.
      if ((old >> kWaiterShift) == 0 || (old & (kLocked | kWoken | kStarving)) != 0) return;
      // Take one waiter off the count and wake it, as the woken one.
      const std::int32_t next = (old - (1 << kWaiterShift)) | kWoken;
      if (state_.compare_exchange_strong(old, next, std::memory_order_release, std::memory_order_relaxed)) {
        sema_.release(scheduler_, /*handoff=*/false);
        return;
      }
    }
  }
  // Starvation mode: the mutex goes to the first waiter (the kLocked bit stays clear: the
  // waiter sets it, see lock_slow).
  sema_.release(scheduler_, /*handoff=*/true);
}

std::size_t GoMutex::describe_waiters(std::string& out) const {
  return sema_.describe_waiters(out, label());
}

}  // namespace schedlab
