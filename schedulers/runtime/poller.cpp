#include "poller.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "../assert.hpp"
#include "../errno_text.hpp"
#include "../stats.hpp"

namespace schedlab {
namespace {

// epoll_wait's batch (Go's netpoll takes 128 events per call): more ready descriptors than this
// wait for the next poll, which any idle worker makes.
constexpr int kEventBatch = 128;

// An event's data: the PollDesc's address and, in the top 16 bits, its sequence number when it
// was registered (Go's taggedPointer). User-space addresses fit in 47 bits on x86-64 and 48 on
// arm64. 0 is the wake-up eventfd (no PollDesc is at address 0).
constexpr std::uint64_t kWakeTag = 0;
constexpr int kSeqShift = 48;
constexpr std::uint64_t kAddressMask = (std::uint64_t{1} << kSeqShift) - 1;

std::uint64_t tag(const PollDesc& d, std::uint32_t seq) {
  const auto address = reinterpret_cast<std::uintptr_t>(&d);
  SCHEDLAB_ASSERT((address & ~kAddressMask) == 0, "a PollDesc's address fits in 48 bits");
  return address | (std::uint64_t{seq & 0xFFFFu} << kSeqShift);
}

}  // namespace

Poller::Poller() {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) {
    throw std::runtime_error("cannot create the network poller (epoll_create1): " + errno_text(errno) +
                             "; raise the open-file limit (ulimit -n) or use fewer connections");
  }
  wakefd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wakefd_ < 0) {
    const int err = errno;
    ::close(epfd_);
    throw std::runtime_error("cannot create the network poller's wake-up eventfd: " + errno_text(err) +
                             "; raise the open-file limit (ulimit -n) or use fewer connections");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered: a non-blocking poll leaves it for the blocking one
  ev.data.u64 = kWakeTag;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev) != 0) {
    const int err = errno;
    ::close(wakefd_);
    ::close(epfd_);
    throw std::runtime_error("cannot register the network poller's eventfd: " + errno_text(err));
  }
}

Poller::~Poller() {
  SCHEDLAB_ASSERT(waiters_.load() == 0, "no task is parked on a poller that is destroyed");
  ::close(wakefd_);
  ::close(epfd_);
}

PollDesc* Poller::open(int fd) {
  PollDesc* d;
  {
    std::lock_guard lock(mutex_);
    if (free_ != nullptr) {
      d = std::exchange(free_, free_->next_free);
    } else {
      descs_.push_back(std::make_unique<PollDesc>());
      d = descs_.back().get();
    }
    d->fd = fd;
  }
  // A stale event handled while d was closed may have left kReady behind: a spurious wake-up at
  // worst, but a fresh registration starts without it (the kernel reports the current state).
  d->rg.store(nullptr, std::memory_order_relaxed);
  d->wg.store(nullptr, std::memory_order_relaxed);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.u64 = tag(*d, d->seq.load(std::memory_order_relaxed));
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int err = errno;
    {
      std::lock_guard lock(mutex_);
      d->fd = -1;
      d->next_free = std::exchange(free_, d);
    }
    if (err == EPERM) return nullptr;  // not pollable (a regular file): always ready
    throw std::runtime_error("cannot watch descriptor " + std::to_string(fd) + " with epoll: " + errno_text(err) +
                             (err == ENOSPC ? "; raise /proc/sys/fs/epoll/max_user_watches" : ""));
  }
  return d;
}

void Poller::close(PollDesc& d) noexcept {
  SCHEDLAB_ASSERT(d.rg.load() == nullptr || d.rg.load() == PollDesc::kReady, "nobody waits to read a closed socket");
  SCHEDLAB_ASSERT(d.wg.load() == nullptr || d.wg.load() == PollDesc::kReady, "nobody waits to write a closed socket");
  epoll_event ev{};
  (void)::epoll_ctl(epfd_, EPOLL_CTL_DEL, d.fd, &ev);  // the close that follows removes it anyway
  // Events already taken from the kernel for the old registration no longer match.
  d.seq.fetch_add(1, std::memory_order_acq_rel);
  d.rg.store(nullptr, std::memory_order_relaxed);
  d.wg.store(nullptr, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  d.fd = -1;
  d.next_free = std::exchange(free_, &d);
}

bool Poller::park(PollDesc& d, IoWait what, Task& t) noexcept {
  // Counted in before the task is published, so that the count never goes below the tasks
  // actually parked (the poller that takes t out counts it out).
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  std::atomic<Task*>& slot = d.slot(what);
  Task* seen = nullptr;
  if (slot.compare_exchange_strong(seen, &t, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
  SCHEDLAB_ASSERT(seen == PollDesc::kReady, "one task at a time waits on a socket in each direction");
  slot.store(nullptr, std::memory_order_relaxed);  // the edge is this wait's
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
  return false;
}

Task* Poller::unblock(std::atomic<Task*>& slot) noexcept {
  Task* seen = slot.load(std::memory_order_acquire);
  for (;;) {
    if (seen == PollDesc::kReady) return nullptr;  // an earlier edge is still unconsumed
    Task* next = seen == nullptr ? PollDesc::kReady : nullptr;
    if (slot.compare_exchange_weak(seen, next, std::memory_order_acq_rel, std::memory_order_acquire)) return seen;
  }
}

TaskList Poller::poll(int timeout_ms) {
  epoll_event events[kEventBatch];
  const bool blocking = timeout_ms != 0;
  if (blocking) {
    std::uint64_t none = 0;
    const bool alone = blocked_since_.compare_exchange_strong(none, now_ns(), std::memory_order_relaxed);
    SCHEDLAB_ASSERT(alone, "one blocking poll at a time");
  }
  int n;
  do {
    polls_.fetch_add(1, std::memory_order_relaxed);
    n = ::epoll_wait(epfd_, events, kEventBatch, timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (blocking) {
    const std::uint64_t since = blocked_since_.exchange(0, std::memory_order_relaxed);
    blocked_done_ns_.fetch_add(now_ns() - since, std::memory_order_relaxed);
  }
  // epoll_wait fails only for a bad epfd or events pointer: a bug, never the socket's doing.
  SCHEDLAB_ASSERT(n >= 0, "epoll_wait on the poller's own descriptor succeeds");
  TaskList ready;
  std::int64_t woken = 0;
  for (int i = 0; i < n; ++i) {
    const epoll_event& ev = events[i];
    if (ev.data.u64 == kWakeTag) {
      if (blocking) {
        std::uint64_t count;
        (void)!::read(wakefd_, &count, sizeof count);  // resets the eventfd (EAGAIN: read already)
        wake_pending_.store(false, std::memory_order_release);
      }
      continue;
    }
    auto* d = reinterpret_cast<PollDesc*>(ev.data.u64 & kAddressMask);
    if ((d->seq.load(std::memory_order_acquire) & 0xFFFFu) != (ev.data.u64 >> kSeqShift)) continue;  // closed since
    // Go's netpoll: an error or hang-up wakes both directions, so that the waiter's next call
    // sees it.
    if ((ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
      if (Task* t = unblock(d->rg)) {
        ready.push_back(*t);
        ++woken;
      }
    }
    if ((ev.events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0) {
      if (Task* t = unblock(d->wg)) {
        ready.push_back(*t);
        ++woken;
      }
    }
  }
  if (woken != 0) {
    readied_.fetch_add(static_cast<std::uint64_t>(woken), std::memory_order_relaxed);
    waiters_.fetch_sub(woken, std::memory_order_seq_cst);
  }
  return ready;
}

void Poller::wake() noexcept {
  if (wake_pending_.exchange(true, std::memory_order_acq_rel)) return;  // one is on its way
  const std::uint64_t one = 1;
  while (::write(wakefd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
  // EAGAIN (the counter is full) cannot happen below 2^64 - 1 writes; the eventfd is readable.
}

std::uint64_t Poller::blocked_ns() const noexcept {
  const std::uint64_t since = blocked_since_.load(std::memory_order_relaxed);
  const std::uint64_t now = now_ns();
  return blocked_done_ns_.load(std::memory_order_relaxed) + (since != 0 && now > since ? now - since : 0);
}

PollerThread::PollerThread(Poller& poller, std::function<void(Task&)> ready)
    : poller_(poller), ready_(std::move(ready)) {
  thread_ = std::thread([this] {
    while (!stopping_.load(std::memory_order_acquire)) {
      TaskList tasks = poller_.poll(-1);
      while (Task* t = tasks.pop_front()) ready_(*t);
    }
  });
}

PollerThread::~PollerThread() {
  stopping_.store(true, std::memory_order_release);
  poller_.wake();
  thread_.join();
}

LazyPoller::~LazyPoller() {
  thread_.reset();  // joined while the poller it blocks in still exists
  owned_.reset();
}

Poller& LazyPoller::get_or_start(std::function<void(Task&)> thread_ready) {
  if (Poller* p = get()) return *p;
  std::lock_guard lock(mutex_);
  if (owned_ == nullptr) {
    auto poller = std::make_unique<Poller>();
    if (thread_ready) {
      try {
        thread_ = std::make_unique<PollerThread>(*poller, std::move(thread_ready));
      } catch (const std::system_error& e) {
        throw std::runtime_error("cannot start the network poller's thread: " + errno_text(e.code().value()) +
                                 "; the process's limit on threads or memory is reached (ulimit -u, ulimit -v)");
      }
    }
    owned_ = std::move(poller);
    poller_.store(owned_.get(), std::memory_order_release);
  }
  return *owned_;
}

}  // namespace schedlab
