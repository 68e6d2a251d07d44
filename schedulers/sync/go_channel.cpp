#include "go_channel.hpp"

#include <cstring>
#include <stdexcept>

#include "../scheduler.hpp"

namespace schedlab {


GoChannel::GoChannel(Scheduler& s, std::size_t capacity, std::size_t elem_size, std::string name)
    : ChannelCore(s, "channel", std::move(name)),
      capacity_(capacity),
      elem_size_(elem_size),
      buffer_(capacity > 0 ? std::make_unique<std::byte[]>(capacity * elem_size) : nullptr) {}

// Executed by a task, with lock_ held; returns with it let go.
void GoChannel::park_on(WaitQueue& q, Waiter& me) {
  q.push_back(me);
  scheduler_.park(me, &RuntimeLock::unlock_fn, &lock_);
  if (me.abandoned) throw_abandoned(*this, me.kind);
}

void GoChannel::send(const void* value) {
  lock_.lock();
  if (abandoned_) {
    lock_.unlock();
    throw_abandoned(*this, WaitKind::send);
  }
  if (closed_) {
    lock_.unlock();
    throw std::logic_error("send on closed " + label());
  }
  if (Waiter* receiver = recvq_.pop_front()) {
    std::memcpy(receiver->elem, value, elem_size_);
    receiver->success = true;
    lock_.unlock();
    scheduler_.ready(*receiver);
    return;
  }
  if (count_ < capacity_) {
    std::memcpy(slot(sendx_), value, elem_size_);
    sendx_ = sendx_ + 1 == capacity_ ? 0 : sendx_ + 1;
    ++count_;
    lock_.unlock();
    return;
  }
  Waiter me(WaitKind::send, *this, const_cast<void*>(value));
  park_on(sendq_, me);
  if (!me.success) throw std::logic_error("send on closed " + label() + " (closed while the send waited)");
}

bool GoChannel::recv(void* out) {
  lock_.lock();
  if (abandoned_) {
    lock_.unlock();
    throw_abandoned(*this, WaitKind::recv);
  }
  if (Waiter* sender = sendq_.pop_front()) {
    if (capacity_ == 0) {
      std::memcpy(out, sender->elem, elem_size_);
    } else {
      // A sender waits only on a full buffer: take its head, and the sender's value takes the
      // freed slot at the tail (Go's recv; sendx follows recvx round the ring).
      std::memcpy(out, slot(recvx_), elem_size_);
      std::memcpy(slot(recvx_), sender->elem, elem_size_);
      recvx_ = recvx_ + 1 == capacity_ ? 0 : recvx_ + 1;
      sendx_ = recvx_;
    }
    sender->success = true;
    lock_.unlock();
    scheduler_.ready(*sender);
    return true;
  }
  if (count_ > 0) {
    std::memcpy(out, slot(recvx_), elem_size_);
    recvx_ = recvx_ + 1 == capacity_ ? 0 : recvx_ + 1;
    --count_;
    lock_.unlock();
    return true;
  }
  if (closed_) {
    lock_.unlock();
    return false;
  }
  Waiter me(WaitKind::recv, *this, out);
  park_on(recvq_, me);
  return me.success;
}

void GoChannel::close() {
  lock_.lock();
  if (closed_) {
    lock_.unlock();
    throw std::logic_error("close of closed " + label());
  }
  closed_ = true;
  // Everyone parked leaves: receivers with nothing (success stays false), senders to throw.
  WaitQueue leaving;
  while (Waiter* w = recvq_.pop_front()) leaving.push_back(*w);
  while (Waiter* w = sendq_.pop_front()) leaving.push_back(*w);
  lock_.unlock();
  while (Waiter* w = leaving.pop_front()) scheduler_.ready(*w);
}

std::size_t GoChannel::describe_waiters(std::string& out) const {
  lock_.lock();
  std::size_t n = 0;
  const std::string what = label() + " (" + (capacity_ == 0 ? std::string("unbuffered") :
                                             std::to_string(count_) + " of " + std::to_string(capacity_) + " buffered") +
                           (closed_ ? ", closed" : "") + ")";
  for (const WaitQueue* q : {&recvq_, &sendq_}) {
    for (const Waiter* w = q->front(); w != nullptr; w = w->next, ++n) append_waiter_line(out, *w, what);
  }
  lock_.unlock();
  return n;
}

void GoChannel::abandon(std::vector<Waiter*>& out) {
  lock_.lock();
  abandoned_ = true;
  for (WaitQueue* q : {&recvq_, &sendq_}) {
    while (Waiter* w = q->pop_front()) {
      w->abandoned = true;
      out.push_back(w);
    }
  }
  lock_.unlock();
}

}  // namespace schedlab
