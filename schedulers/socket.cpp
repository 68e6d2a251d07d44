// socket.cpp: Socket and the task API's socket waits (api.hpp, "Waiting for a socket").
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "api.hpp"

namespace schedlab {

void Socket::close() noexcept {
  if (fd_ < 0) return;
  if (desc_ != nullptr) watcher_->io_unregister(*desc_);
  ::close(fd_);  // a socket's close does not fail in a way a caller could act on
  fd_ = -1;
  watcher_ = nullptr;
  desc_ = nullptr;
}

namespace detail {

void task_wait(Socket& s, IoWait what) {
  Scheduler& sched = active_or_throw();
  if (s.watcher_ == nullptr) {
    s.desc_ = sched.io_register(s.fd_);
    s.watcher_ = &sched;
  } else if (s.watcher_ != &sched) {
    throw std::logic_error("a Socket waited on in one scheduler's run and then in another's: a Socket lives "
                           "inside the run that first waited on it");
  }
  sched.io_wait(s.fd_, s.desc_, what);
}

void kernel_wait(Socket& s, IoWait what) { wait_in_kernel(s.fd(), what); }

IoResult read_full(Socket& s, void* buf, std::size_t n, void (*wait)(Socket&, IoWait)) {
  auto* p = static_cast<char*>(buf);
  IoResult r;
  while (r.bytes < n) {
    const ssize_t got = ::read(s.fd(), p + r.bytes, n - r.bytes);
    if (got > 0) {
      r.bytes += static_cast<std::size_t>(got);
    } else if (got == 0) {
      break;  // the peer's end of file
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait(s, IoWait::readable);
    } else if (errno != EINTR) {
      r.error = errno;
      break;
    }
  }
  return r;
}

IoResult write_full(Socket& s, const void* buf, std::size_t n, void (*wait)(Socket&, IoWait)) {
  const auto* p = static_cast<const char*>(buf);
  IoResult r;
  bool socket = true;
  while (r.bytes < n) {
    const ssize_t put = socket ? ::send(s.fd(), p + r.bytes, n - r.bytes, MSG_NOSIGNAL)
                               : ::write(s.fd(), p + r.bytes, n - r.bytes);
    if (put >= 0) {
      r.bytes += static_cast<std::size_t>(put);
    } else if (errno == ENOTSOCK && socket) {
      socket = false;  // a pipe or an eventfd: write(2)
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait(s, IoWait::writable);
    } else if (errno != EINTR) {
      r.error = errno;
      break;
    }
  }
  return r;
}

}  // namespace detail
}  // namespace schedlab
