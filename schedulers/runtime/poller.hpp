// poller.hpp: the fiber runtime's network poller, Go's netpoll on epoll (runtime/netpoll.go,
// netpoll_epoll.go).
//
// A task that waits for a socket (api.hpp: Socket, Tasks::wait_readable) does not hold its
// worker thread. It parks on the socket's PollDesc, its worker runs other tasks, and whoever
// next polls the runtime's epoll instance and finds the socket ready makes the task runnable
// again through the policy. Who polls is the policy's business (policy.hpp, NetpollMode):
// steal-half polls as Go does (without blocking before it steals, blocking when a worker has
// nothing else to do; steal_half.cpp), fair and central hand it to a thread of its own
// (PollerThread below).
//
// Registration, once per descriptor (Go's netpollopen). A descriptor is added to epoll at the
// first wait on it, for its whole life, edge-triggered, for input, output and the peer's
// hang-up: EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET. Edge-triggered because a level-triggered
// registration would report a readable socket on every poll until a task read it, and its task
// may be queued behind others for a while; an edge is reported once, so each readiness readies
// at most one task per direction and costs nothing afterwards. The price, as in Go: a waiter
// must never miss an edge, which the wait slots below guarantee, and a woken task retries its
// call and waits again on EAGAIN (a readiness is a hint, not a promise of data).
//
// The wait slots (Go's pollDesc.rg and wg, netpollblock and netpollunblock). Each PollDesc has
// one slot per direction, holding nullptr (nothing seen, nobody waits), kReady (an edge came and
// nobody waited for it yet) or the task parked on it. Two atomic transitions meet there:
//   waiter:  kReady -> nullptr          (take_ready: the edge is consumed, no park)
//            nullptr -> task            (park, once the task's fiber is saved: from the switch
//                                        action, so whoever takes it out may resume it at once)
//   poller:  nullptr -> kReady          (an edge with nobody waiting is kept for the next wait)
//            task -> nullptr            (the task is handed to the caller of poll)
// A park that finds kReady instead consumes it and makes the task runnable itself. So an edge
// either lands in the slot before the park (and the park sees it) or finds the task there:
// never lost, never delivered twice, whichever thread runs which side.
//
// Descriptors are recycled, never freed while the poller lives (Go's pollcache): an event
// already returned by epoll_wait may name a PollDesc that was closed and reused meanwhile.
// Each event carries the descriptor's sequence number (Go's fdseq) and an event for an older
// one is dropped; the few that slip through the check's window are spurious wake-ups, which
// every waiter tolerates.
//
// Waking a blocked poll (Go's netpollBreak): an eventfd in the same epoll set, level-triggered,
// written once per wake (a flag keeps several wakes to one write); only a blocking poll reads
// it back, so a non-blocking poll that sees it leaves it for the thread it was meant for.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../scheduler.hpp"
#include "../task.hpp"
#include "task_list.hpp"

namespace schedlab {

// A registered descriptor (Go's pollDesc). Owned and recycled by its Poller.
struct alignas(64) PollDesc {
  static inline Task* const kReady = reinterpret_cast<Task*>(std::uintptr_t{1});

  std::atomic<Task*> rg{nullptr};  // the readable slot: nullptr, kReady or the parked task
  std::atomic<Task*> wg{nullptr};  // the writable slot
  // Bumped when the descriptor is closed; events carry the value they were registered with.
  std::atomic<std::uint32_t> seq{0};
  int fd = -1;                 // written by open and close, under the poller's lock
  PollDesc* next_free = nullptr;  // guarded by the poller's lock

  std::atomic<Task*>& slot(IoWait what) noexcept { return what == IoWait::readable ? rg : wg; }
};

class Poller {
 public:
  // An epoll instance and its wake-up eventfd. Throws std::runtime_error naming the errno and
  // the fix when the process cannot have them (ulimit -n).
  Poller();
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // Watches fd (non-blocking) edge-triggered for the rest of its life. nullptr: epoll refuses
  // this kind of descriptor (a regular file, always ready: EPERM), and its waits go to the
  // kernel. Throws std::runtime_error for any other refusal (ENOMEM, ENOSPC: max_user_watches).
  PollDesc* open(int fd);
  // Stops watching d's descriptor and recycles d; before the descriptor is closed, with nobody
  // parked on it.
  void close(PollDesc& d) noexcept;

  // ---- the waiting task's side (see the top of this file) -----------------------------------
  // Consumes an edge that came while nobody waited: true if there was one (no park needed).
  static bool take_ready(PollDesc& d, IoWait what) noexcept {
    Task* ready = PollDesc::kReady;
    return d.slot(what).compare_exchange_strong(ready, nullptr, std::memory_order_acq_rel,
                                                 std::memory_order_relaxed);
  }
  // Executed once t's fiber is saved: parks t on d for `what`. False when an edge came
  // meanwhile: it is consumed, and the caller makes t runnable itself.
  bool park(PollDesc& d, IoWait what, Task& t) noexcept;

  // ---- polling --------------------------------------------------------------------------
  // One epoll_wait (Go's netpoll): timeout_ms 0 does not block, -1 blocks until an edge or a
  // wake(). Returns the tasks it made runnable (linked through Task::next); the caller hands
  // them to the policy. Any thread; at most one blocking poll at a time (the policy's rule).
  TaskList poll(int timeout_ms);
  // Makes a blocking poll return now, or the next one start and return at once. Any thread.
  void wake() noexcept;

  // Tasks parked on a descriptor now, plus any about to be (a park counts itself in before it
  // publishes the task). Go's netpollWaiters: a policy polls only while it is not zero.
  std::int64_t waiters() const noexcept { return waiters_.load(std::memory_order_seq_cst); }

  // Counters, read racily by any thread (counters.hpp: netpoll_*).
  std::uint64_t readied() const noexcept { return readied_.load(std::memory_order_relaxed); }
  std::uint64_t polls() const noexcept { return polls_.load(std::memory_order_relaxed); }
  // Time spent blocked in epoll_wait, the blocking poll in progress included.
  std::uint64_t blocked_ns() const noexcept;

 private:
  // Go's netpollunblock for one slot: kReady if nobody waited, else the waiting task.
  static Task* unblock(std::atomic<Task*>& slot) noexcept;

  int epfd_ = -1;
  int wakefd_ = -1;
  std::atomic<bool> wake_pending_{false};  // a wake() was written and not read back yet
  std::atomic<std::int64_t> waiters_{0};
  std::atomic<std::uint64_t> readied_{0};
  std::atomic<std::uint64_t> polls_{0};
  std::atomic<std::uint64_t> blocked_done_ns_{0};
  std::atomic<std::uint64_t> blocked_since_{0};  // start of the blocking poll in progress, 0 if none

  std::mutex mutex_;  // the descriptor cache
  std::vector<std::unique_ptr<PollDesc>> descs_;  // every PollDesc ever made; freed with the poller
  PollDesc* free_ = nullptr;
};

// The simpler integration fair and central use: one thread of its own blocks in the poller and
// hands every task it readies to `ready` (the policy's submit_ready, from outside the workers).
// The cost against steal-half's integration: a thread switch from this thread to a worker per
// readiness, where a steal-half worker that polls runs the readied task itself.
class PollerThread {
 public:
  PollerThread(Poller& poller, std::function<void(Task&)> ready);
  // Stops and joins the thread.
  ~PollerThread();
  PollerThread(const PollerThread&) = delete;
  PollerThread& operator=(const PollerThread&) = delete;

 private:
  Poller& poller_;
  const std::function<void(Task&)> ready_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// A runtime's poller, made at its first registration: a run without sockets has no epoll
// descriptor and no extra thread.
class LazyPoller {
 public:
  ~LazyPoller();
  // The poller, or nullptr before the first get_or_start. Any thread.
  Poller* get() const noexcept { return poller_.load(std::memory_order_acquire); }
  // Makes the poller if there is none yet; with `thread_ready`, also a PollerThread that hands
  // it the tasks it readies. Throws what Poller's constructor throws.
  Poller& get_or_start(std::function<void(Task&)> thread_ready);

 private:
  std::mutex mutex_;
  std::unique_ptr<Poller> owned_;
  std::unique_ptr<PollerThread> thread_;  // destroyed (joined) before owned_
  std::atomic<Poller*> poller_{nullptr};
};

}  // namespace schedlab
