// go_channel.hpp: Go's channel (runtime/chan.go) over a scheduler's park and ready.
//
// One lock, a ring buffer of `capacity` values, and two FIFO queues of parked tasks:
//
//   send(v)   a receiver is parked ──► copy v into its frame, ready it (Go's send: the
//                                      receiver goes to the sender's P's runnext)
//             room in the buffer ────► copy v to the buffer's tail
//             otherwise ─────────────► park on sendq with v in the frame, until a receiver
//                                      takes it (or the channel closes: a closed send throws)
//   recv()    a sender is parked ────► unbuffered: take its value; buffered (so the buffer is
//                                      full): take the head, move its value to the tail; ready it
//             a value is buffered ───► take the head
//             closed and empty ──────► false (Go: v, ok := <-ch with ok false)
//             otherwise ─────────────► park on recvq until a sender hands a value over, or the
//                                      channel closes
//   close()   every parked receiver gets false, every parked sender throws (Go panics)
//
// Values are copied as bytes (Channel<T> requires a trivially copyable T), straight from one
// task's frame to the other's when one waits, as Go's sendDirect. Parked tasks are readied after
// the lock is let go, as Go does. The lock is a RuntimeLock, released by park() once the task
// cannot miss its ready (scheduler.hpp).
//
// Where it departs from Go: no select (no workload needs it), so a waiter is on one queue only;
// a send on a closed channel throws std::logic_error where Go panics.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "runtime_lock.hpp"
#include "sync_object.hpp"
#include "waiter.hpp"

namespace schedlab {

class GoChannel final : public ChannelCore {
 public:
  GoChannel(Scheduler& s, std::size_t capacity, std::size_t elem_size, std::string name);
  ~GoChannel() override { leave_registry(); }

  void send(const void* value) override;
  bool recv(void* out) override;
  void close() override;
  std::size_t describe_waiters(std::string& out) const override;
  void abandon(std::vector<Waiter*>& out) override;

 private:
  void* slot(std::size_t i) noexcept { return buffer_.get() + i * elem_size_; }
  // Parks the calling task on `q` as `me`, the lock held (park lets it go); rethrows an
  // abandonment.
  void park_on(WaitQueue& q, Waiter& me);

  const std::size_t capacity_;
  const std::size_t elem_size_;
  std::unique_ptr<std::byte[]> buffer_;  // capacity_ values
  mutable RuntimeLock lock_;             // guards everything below
  std::size_t count_ = 0;                // values in the buffer
  std::size_t sendx_ = 0;                // where the next buffered value goes
  std::size_t recvx_ = 0;                // where the next received value comes from
  bool closed_ = false;
  bool abandoned_ = false;  // the deadlock watch gave up on it: every parking operation throws
  WaitQueue recvq_;
  WaitQueue sendq_;
};

}  // namespace schedlab
