#include "loopback_endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "errno_text.hpp"

namespace schedlab {

LoopbackEndpoint::LoopbackEndpoint(std::string who, const char* timer) : who_(std::move(who)) {
  try {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw error("create its listening socket", errno);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only
    addr.sin_port = 0;                               // an ephemeral port
    if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      throw error("bind 127.0.0.1", errno);
    }
    if (::listen(listen_fd_, SOMAXCONN) != 0) throw error("listen on 127.0.0.1", errno);
    socklen_t len = sizeof addr;
    if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) throw error("read its port", errno);
    port_ = ntohs(addr.sin_port);

    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) throw error("create its epoll instance", errno);
    timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer_fd_ < 0) throw error(std::string("create its ") + timer, errno);
    stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (stop_fd_ < 0) throw error("create its stop eventfd", errno);
    for (const auto& [fd, tag] : {std::pair{listen_fd_, kListenTag}, std::pair{timer_fd_, kTimerTag},
                                  std::pair{stop_fd_, kStopTag}}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = tag;
      if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) throw error("watch its descriptors", errno);
    }
  } catch (...) {
    close_all();
    throw;
  }
}

LoopbackEndpoint::~LoopbackEndpoint() {
  if (thread_.joinable()) {
    const std::uint64_t one = 1;
    while (::write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  close_all();
}

void LoopbackEndpoint::start(std::function<void()> serve) {
  try {
    thread_ = std::thread(std::move(serve));
  } catch (const std::system_error& e) {
    throw error("start its thread", e.code().value());
  }
}

std::runtime_error LoopbackEndpoint::error(const std::string& what, int err) const {
  return std::runtime_error(who_ + " cannot " + what + ": " + errno_text(err) +
                            (err == EMFILE || err == ENFILE ? "; raise the open-file limit (ulimit -n)" : ""));
}

void LoopbackEndpoint::close_listener() noexcept {
  if (listen_fd_ < 0) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  ::close(listen_fd_);
  listen_fd_ = -1;
}

void LoopbackEndpoint::close_all() noexcept {
  for (int* fd : {&listen_fd_, &epoll_fd_, &timer_fd_, &stop_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

}  // namespace schedlab
