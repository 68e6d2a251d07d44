// io_wait.cpp: the fiber runtime's side of a task waiting for a socket (api.hpp, Socket).
//
// Under NetpollMode::off the wait is the Scheduler default, poll(2) inside the blocking bracket:
// steal-half hands its processor to another thread for it, fair and central keep the worker
// blocked. Otherwise the task parks on the runtime's poller (poller.hpp): it suspends like a
// join, and its saved fiber is published in the descriptor's wait slot from the switch action,
// so that the poll that finds the socket ready may resume it at once.
#include "runtime.hpp"

namespace schedlab {

PollDesc* FiberRuntime::io_register(int fd) {
  const NetpollMode mode = config_.netpoll ? policy_->netpoll_mode() : NetpollMode::off;
  if (mode == NetpollMode::off) return nullptr;
  std::function<void(Task&)> thread_ready;
  if (mode == NetpollMode::thread) {
    // From the poller's own thread, which is no worker (from = nullptr).
    thread_ready = [this](Task& t) {
      mark_runnable(t);
      policy_->submit_ready(t, nullptr);
    };
  }
  return netpoll_.get_or_start(std::move(thread_ready)).open(fd);
}

void FiberRuntime::io_unregister(PollDesc& desc) noexcept { netpoll_.get()->close(desc); }

// Executed by a task, on its fiber.
void FiberRuntime::io_wait(int fd, PollDesc* desc, IoWait what) {
  if (desc == nullptr) {
    Scheduler::io_wait(fd, desc, what);
    return;
  }
  Poller* poller = netpoll_.get();
  if (Poller::take_ready(*desc, what)) return;  // an edge came since the last wait
  suspend_current([this, poller, desc, what](Task& me, Worker& here) {
    if (poller->park(*desc, what, me)) {
      policy_->on_network_wait(here);
    } else {
      mark_runnable(me);
      policy_->submit_ready(me, &here);
    }
  });
}

}  // namespace schedlab
