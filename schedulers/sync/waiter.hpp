// waiter.hpp: a task parked on a channel or a mutex (Go's sudog), and the queue it waits in.
//
// The channel or mutex (go_channel.hpp, go_mutex.hpp) builds a Waiter in the parking task's
// own frame, queues it under its lock and asks the scheduler to park the task
// (Scheduler::park); whoever takes it off the queue, under the same lock, fills in the outcome
// and readies the task (Scheduler::ready). The frame stays put while the task is parked (a
// fiber's stack, a thread's stack, a suspended oneTBB task's stack), so the Waiter needs no
// allocation.
#pragma once

#include <cstdint>

namespace schedlab {

struct Task;
class SyncObject;

// What a parked task waits for: the deadlock report says it, and the counters tell channels
// from locks (chan_parks, lock_parks).
enum class WaitKind : std::uint8_t { send, recv, lock };

struct Waiter {
  Waiter(WaitKind k, const SyncObject& o, void* e = nullptr) noexcept : kind(k), on(&o), elem(e) {}
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  const WaitKind kind;
  const SyncObject* const on;  // the channel or mutex it waits on
  // send: the value to hand over (read by the receiver that takes this waiter); recv: where a
  // sender's value goes.
  void* const elem;
  // Set by whoever readies it. recv: a value arrived (false: the channel was closed); send: a
  // receiver took the value (false: closed); lock: the semaphore was handed over directly (Go's
  // ticket, starvation mode).
  bool success = false;
  // The deadlock watch readied it because nothing else ever would (SyncObject::abandon): the
  // operation throws DeadlockError.
  bool abandoned = false;

  // The backend's: the fiber runtimes' parked Task (named in the deadlock report), os-threads'
  // sleep, oneTBB's suspend point. Written by Scheduler::park before the object's lock is let go.
  Task* task = nullptr;
  void* backend = nullptr;

  Waiter* next = nullptr;  // WaitQueue links, guarded by the object's lock
  Waiter* prev = nullptr;
};

// A FIFO of waiters (Go's waitq), intrusive, guarded by its owner's lock.
class WaitQueue {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  void push_back(Waiter& w) noexcept {
    w.next = nullptr;
    w.prev = tail_;
    (tail_ != nullptr ? tail_->next : head_) = &w;
    tail_ = &w;
  }
  void push_front(Waiter& w) noexcept {
    w.prev = nullptr;
    w.next = head_;
    (head_ != nullptr ? head_->prev : tail_) = &w;
    head_ = &w;
  }
  Waiter* pop_front() noexcept {
    Waiter* w = head_;
    if (w != nullptr) {
      head_ = w->next;
      (head_ != nullptr ? head_->prev : tail_) = nullptr;
      w->next = nullptr;
    }
    return w;
  }
  const Waiter* front() const noexcept { return head_; }

 private:
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
};

}  // namespace schedlab
