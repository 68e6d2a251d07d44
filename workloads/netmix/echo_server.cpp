#include "echo_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "errno_text.hpp"

namespace schedlab {
namespace {

// The watchdog's patience: long enough for any honest run (a client at one worker waits its
// turn behind every other connection's work), short enough that a lost client fails a test
// before ctest's timeout does.
constexpr std::chrono::seconds kStallFloor{20};

std::uint64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct Connection {
  std::uint64_t id;   // never reused, unlike the descriptor: a delayed reply finds its own
  std::string out;    // replies the kernel has not taken yet
  bool want_out = false;  // EPOLLOUT is armed
};

// Bytes to echo once their delay has passed (one constant delay: arrival order is due order).
struct Delayed {
  int fd;
  std::uint64_t id;
  std::uint64_t due_ns;
  std::string bytes;
};

}  // namespace

EchoServer::EchoServer(std::uint64_t delay_us)
    : delay_us_(delay_us),
      stall_(kStallFloor + std::chrono::microseconds(delay_us) * 10),
      endpoint_("netmix's echo server", "reply timer") {
  endpoint_.start([this] { serve(); });
}

bool EchoServer::wait_until_idle(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (open_connections() != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

std::string EchoServer::error() const {
  std::lock_guard lock(error_mutex_);
  return error_;
}

void EchoServer::fail(std::string why) {
  std::lock_guard lock(error_mutex_);
  if (error_.empty()) error_ = std::move(why);
}

// Executed by the server's thread, for its whole life. Every descriptor it opens it closes
// before it returns.
void EchoServer::serve() noexcept {
  std::unordered_map<int, Connection> connections;
  std::deque<Delayed> delayed;
  std::uint64_t next_id = 0;
  std::uint64_t last_byte_ns = mono_ns();
  std::vector<char> buffer(64 * 1024);

  auto close_connection = [&](int fd, bool reset) {
    if (reset) {
      const linger abort{1, 0};  // close with RST: the client's next call fails at once
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    }
    ::epoll_ctl(endpoint_.epoll_fd(), EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    connections.erase(fd);
    open_.fetch_sub(1, std::memory_order_acq_rel);
  };
  // Sends what the connection owes; false if the connection broke (and was closed).
  auto flush = [&](int fd) {
    Connection& c = connections.at(fd);
    while (!c.out.empty()) {
      const ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<std::size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!c.want_out) {
          c.want_out = true;
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLRDHUP | EPOLLOUT;
          ev.data.u64 = static_cast<std::uint64_t>(fd);
          ::epoll_ctl(endpoint_.epoll_fd(), EPOLL_CTL_MOD, fd, &ev);
        }
        return true;
      } else {
        close_connection(fd, false);  // the client went away (EPIPE, ECONNRESET)
        return false;
      }
    }
    if (c.want_out) {
      c.want_out = false;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u64 = static_cast<std::uint64_t>(fd);
      ::epoll_ctl(endpoint_.epoll_fd(), EPOLL_CTL_MOD, fd, &ev);
    }
    return true;
  };
  auto arm_timer = [&] {
    itimerspec when{};
    if (!delayed.empty()) {
      when.it_value.tv_sec = static_cast<time_t>(delayed.front().due_ns / 1'000'000'000u);
      when.it_value.tv_nsec = static_cast<long>(delayed.front().due_ns % 1'000'000'000u);
    }
    ::timerfd_settime(endpoint_.timer_fd(), TFD_TIMER_ABSTIME, &when, nullptr);  // all zero: disarmed
  };
  auto release_due = [&] {
    const std::uint64_t now = mono_ns();
    std::vector<int> owed;
    while (!delayed.empty() && delayed.front().due_ns <= now) {
      Delayed& d = delayed.front();
      auto it = connections.find(d.fd);
      if (it != connections.end() && it->second.id == d.id) {  // else closed meanwhile
        it->second.out += d.bytes;
        owed.push_back(d.fd);
      }
      delayed.pop_front();
    }
    for (int fd : owed) {
      if (connections.count(fd) != 0) flush(fd);  // an earlier flush may have closed it
    }
    arm_timer();
  };
  auto accept_all = [&] {
    for (;;) {
      const int fd = ::accept4(endpoint_.listen_fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR || errno == ECONNABORTED) continue;
        fail("the echo server could not accept a connection: " + errno_text(errno) +
             (errno == EMFILE || errno == ENFILE ? "; raise the open-file limit (ulimit -n) or use fewer --conns" : "") +
             "; it closed its listening socket, so the connections still waiting are reset");
        endpoint_.close_listener();
        return;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as Go's net does by default
      connections.emplace(fd, Connection{next_id++, {}, false});
      open_.fetch_add(1, std::memory_order_acq_rel);
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u64 = static_cast<std::uint64_t>(fd);
      ::epoll_ctl(endpoint_.epoll_fd(), EPOLL_CTL_ADD, fd, &ev);
      last_byte_ns = mono_ns();
    }
  };
  auto receive = [&](int fd) {
    for (;;) {
      const ssize_t n = ::read(fd, buffer.data(), buffer.size());
      if (n > 0) {
        received_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_acq_rel);
        last_byte_ns = mono_ns();
        if (delay_us_ == 0) {
          connections.at(fd).out.append(buffer.data(), static_cast<std::size_t>(n));
          if (!flush(fd)) return;
        } else {
          const bool was_empty = delayed.empty();
          delayed.push_back(Delayed{fd, connections.at(fd).id, last_byte_ns + delay_us_ * 1000,
                                    std::string(buffer.data(), static_cast<std::size_t>(n))});
          if (was_empty) arm_timer();
        }
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;
      } else {
        close_connection(fd, false);  // the client's end of file, or a reset
        return;
      }
    }
  };

  epoll_event events[64];
  for (;;) {
    // With connections open, wake at least once a second to watch for a stall.
    const int n = ::epoll_wait(endpoint_.epoll_fd(), events, 64, connections.empty() ? -1 : 1000);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("the echo server's epoll_wait failed: " + errno_text(errno));
      break;
    }
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[i].data.u64;
      if (tag == LoopbackEndpoint::kStopTag) {
        stop = true;
      } else if (tag == LoopbackEndpoint::kListenTag) {
        if (endpoint_.listen_fd() >= 0) accept_all();
      } else if (tag == LoopbackEndpoint::kTimerTag) {
        std::uint64_t expirations;
        (void)!::read(endpoint_.timer_fd(), &expirations, sizeof expirations);
        release_due();
      } else {
        const int fd = static_cast<int>(tag);
        if (connections.count(fd) == 0) continue;  // closed earlier in this batch
        if ((events[i].events & EPOLLOUT) != 0 && !flush(fd)) continue;
        if ((events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) receive(fd);
      }
    }
    if (stop) break;
    if (!delayed.empty() && delayed.front().due_ns <= mono_ns()) release_due();
    if (!connections.empty() && mono_ns() - last_byte_ns > static_cast<std::uint64_t>(stall_.count())) {
      fail("the echo server heard nothing from its " + std::to_string(connections.size()) + " open connections for " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(stall_).count()) +
           " s and reset them (a client task that never ran again?)");
      while (!connections.empty()) close_connection(connections.begin()->first, true);
      delayed.clear();
      arm_timer();
    }
  }
  while (!connections.empty()) close_connection(connections.begin()->first, false);
}

}  // namespace schedlab
