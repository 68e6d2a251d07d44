#include "load_generator.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <list>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "errno_text.hpp"
#include "netmix.hpp"
#include "stats.hpp"

namespace schedlab {
namespace {

// As the echo server's (echo_server.cpp): long enough for any honest run, short enough that a
// lost server task fails a test before ctest's timeout does.
constexpr std::chrono::seconds kStallFloor{20};

}  // namespace

ArrivalClock::ArrivalClock(std::uint64_t rate_per_s, Arrivals arrivals, std::uint64_t seed)
    : rate_(rate_per_s), arrivals_(arrivals), random_(seed), gap_(static_cast<double>(rate_per_s) / 1e9) {
  if (rate_per_s == 0) throw std::invalid_argument("--rate 0: an open-loop load needs at least one request a second");
}

std::uint64_t ArrivalClock::next_offset_ns() {
  const std::uint64_t k = k_++;
  if (arrivals_ == Arrivals::fixed) {
    return static_cast<std::uint64_t>(static_cast<unsigned __int128>(k) * 1'000'000'000u / rate_);
  }
  if (k == 0) return 0;
  poisson_ns_ += gap_(random_);
  return static_cast<std::uint64_t>(poisson_ns_);
}

// One session (see the header): its schedule, its connections by index, what it measured.
struct LoadGenerator::Session {
  Session(const LoadGeneratorConfig& config, std::uint64_t start)
      : clock(config.rate_per_s, config.arrivals, config.seed), t0(start), total(config.conns * config.requests),
        due(config.conns), conns(config.conns, nullptr) {
    next_due_ns = t0 + clock.next_offset_ns();
  }
  ArrivalClock clock;
  const std::uint64_t t0;
  const std::uint64_t total;
  std::uint64_t scheduled = 0;    // requests whose intended time has come
  std::uint64_t next_due_ns = 0;  // the intended time of request `scheduled`
  std::vector<std::deque<std::uint64_t>> due;  // per connection: intended times come, not yet sent
  std::vector<Connection*> conns;              // per connection index; null until accepted
  std::uint64_t accepted = 0;
  std::uint64_t replies = 0;
  std::uint64_t last_reply_ns = 0;
  std::uint64_t last_progress_ns = 0;
  LatencyHistogram latency;
  std::string error;
  bool ended = false;
};

struct LoadGenerator::Connection {
  int fd = -1;
  Session* session = nullptr;
  std::uint64_t index = 0;      // c: its place in the session's accept order
  std::uint64_t next = 0;       // the request number r to send next
  bool outstanding = false;     // request next - 1 sent, its reply not whole yet
  std::uint64_t intended_ns = 0;  // of the outstanding request
  std::string out;              // bytes of the outstanding request the kernel has not taken
  std::vector<unsigned char> expect, got;  // the outstanding request's bytes, its reply so far
  bool want_out = false;
};

LoadGenerator::LoadGenerator(LoadGeneratorConfig config)
    : config_(config), stall_(kStallFloor), endpoint_("netmix's load generator", "send timer") {
  if (config_.conns == 0 || config_.requests == 0 || config_.request_bytes == 0 || config_.rate_per_s == 0) {
    throw std::invalid_argument("netmix's load generator needs at least one connection, request, byte and request a second");
  }
  endpoint_.start([this] { serve(); });
}

std::optional<LoadSession> LoadGenerator::take_session(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ended_.wait_for(lock, timeout, [this] { return last_.has_value() && open_sessions_ == 0; });
  if (open_sessions_ != 0) {
    LoadSession unfinished;
    unfinished.error = "netmix's load generator: a session was still open " + std::to_string(timeout.count()) +
                       " ms after its server's run ended (a reply that never came?)";
    return unfinished;
  }
  return std::exchange(last_, std::nullopt);
}

// Executed by the generator's thread, for its whole life. Every descriptor it opens it closes
// before it returns. Times are now_ns() (the steady clock), the clock of the schedule.
void LoadGenerator::serve() noexcept {
  // A timer that fires late delays a request's send, which its latency then carries: keep the
  // kernel's slack (50 us by default, docs/platform.md) from adding to every send.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  std::list<Session> sessions;  // begun, in order; the last is the one new connections join
  std::unordered_map<int, std::unique_ptr<Connection>> connections;
  std::vector<unsigned char> buffer(64 * 1024);

  auto end_session = [&](Session& s, std::string error) {
    if (s.ended) return;
    s.ended = true;
    if (s.error.empty()) s.error = std::move(error);
    LoadSession result;
    result.latency = s.latency.distribution();
    result.replies = s.replies;
    if (s.replies > 0 && s.last_reply_ns > s.t0) {
      result.rate_per_s = static_cast<double>(s.replies) * 1e9 / static_cast<double>(s.last_reply_ns - s.t0);
    }
    result.error = s.error;
    {
      std::lock_guard lock(mutex_);
      last_ = std::move(result);
      --open_sessions_;
    }
    ended_.notify_all();
  };
  auto close_connection = [&](int fd, bool reset) {
    if (reset) {
      const linger abort{1, 0};  // close with RST: the server's next call fails at once
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    }
    ::epoll_ctl(endpoint_.epoll_fd(), EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    auto it = connections.find(fd);
    if (Session* s = it->second->session) s->conns[it->second->index] = nullptr;
    connections.erase(it);
  };
  auto fail_session = [&](Session& s, const std::string& why) {
    for (Connection* c : s.conns) {
      if (c != nullptr) close_connection(c->fd, true);
    }
    end_session(s, why);
  };
  auto watch = [&](Connection& c, bool out) {
    if (c.want_out == out) return;
    c.want_out = out;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (out ? EPOLLOUT : 0u);
    ev.data.u64 = static_cast<std::uint64_t>(c.fd);
    ::epoll_ctl(endpoint_.epoll_fd(), EPOLL_CTL_MOD, c.fd, &ev);
  };
  // Sends what the connection owes; false if it broke (the session then failed).
  auto flush = [&](Connection& c) {
    while (!c.out.empty()) {
      const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<std::size_t>(n));
        c.session->last_progress_ns = now_ns();
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        watch(c, true);
        return true;
      } else {
        fail_session(*c.session, "netmix's load generator could not send request " + std::to_string(c.next) +
                                     " on connection " + std::to_string(c.index + 1) + ": " + errno_text(errno));
        return false;
      }
    }
    watch(c, false);
    return true;
  };
  // Sends connection c's next request if one is due and none is outstanding.
  auto try_send = [&](Session& s, std::uint64_t index) {
    Connection* c = s.conns[index];
    if (c == nullptr || c->outstanding || s.due[index].empty() || s.ended) return;
    c->intended_ns = s.due[index].front();
    s.due[index].pop_front();
    c->outstanding = true;
    c->expect.resize(config_.request_bytes);
    for (std::uint64_t j = 0; j < config_.request_bytes; ++j) c->expect[j] = netmix_request_byte(c->index, c->next, j);
    c->got.clear();
    c->next += 1;
    c->out.assign(c->expect.begin(), c->expect.end());
    flush(*c);
  };
  // The requests whose intended time has come, each to its connection.
  auto schedule = [&](std::uint64_t now) {
    for (Session& s : sessions) {
      while (!s.ended && s.scheduled < s.total && s.next_due_ns <= now) {
        const std::uint64_t index = s.scheduled % config_.conns;
        s.due[index].push_back(s.next_due_ns);
        ++s.scheduled;
        if (s.scheduled < s.total) s.next_due_ns = s.t0 + s.clock.next_offset_ns();
        try_send(s, index);
      }
    }
    std::uint64_t next = 0;
    for (const Session& s : sessions) {
      if (!s.ended && s.scheduled < s.total && (next == 0 || s.next_due_ns < next)) next = s.next_due_ns;
    }
    itimerspec when{};  // all zero: disarmed
    if (next != 0) {
      when.it_value.tv_sec = static_cast<time_t>(next / 1'000'000'000u);
      when.it_value.tv_nsec = static_cast<long>(next % 1'000'000'000u);
      if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0) when.it_value.tv_nsec = 1;
    }
    ::timerfd_settime(endpoint_.timer_fd(), TFD_TIMER_ABSTIME, &when, nullptr);
  };
  auto accept_all = [&] {
    for (;;) {
      const int fd = ::accept4(endpoint_.listen_fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN; or out of descriptors, which the server's connect then reports
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as Go's net does by default
      const std::uint64_t now = now_ns();
      if (sessions.empty() || sessions.back().accepted == config_.conns || sessions.back().ended) {
        sessions.emplace_back(config_, now);
        sessions.back().last_progress_ns = now;
        std::lock_guard lock(mutex_);
        ++open_sessions_;
      }
      Session& s = sessions.back();
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      c->session = &s;
      c->index = s.accepted++;
      s.conns[c->index] = c.get();
      connections.emplace(fd, std::move(c));
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.u64 = static_cast<std::uint64_t>(fd);
      ::epoll_ctl(endpoint_.epoll_fd(), EPOLL_CTL_ADD, fd, &ev);
      schedule(now);
      try_send(s, s.accepted - 1);
    }
  };
  auto receive = [&](Connection& c) {
    Session& s = *c.session;
    for (;;) {
      const std::size_t want = c.outstanding ? config_.request_bytes - c.got.size() : buffer.size();
      const ssize_t n = ::read(c.fd, buffer.data(), std::min(want, buffer.size()));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {  // the server's end of file, or a reset
        const bool done = c.next == config_.requests && !c.outstanding;
        if (!done && !s.ended) {
          fail_session(s, "netmix's load generator: the server closed connection " + std::to_string(c.index + 1) +
                              " of " + std::to_string(config_.conns) + " after " +
                              std::to_string(c.next - (c.outstanding ? 1 : 0)) + " of " +
                              std::to_string(config_.requests) + " replies" +
                              (n < 0 ? " (" + errno_text(errno) + ")" : ""));
        } else {
          close_connection(c.fd, false);
        }
        return;
      }
      const std::uint64_t now = now_ns();
      s.last_progress_ns = now;
      if (!c.outstanding) {
        fail_session(s, "netmix's load generator: connection " + std::to_string(c.index + 1) +
                            " sent bytes nobody asked for");
        return;
      }
      c.got.insert(c.got.end(), buffer.begin(), buffer.begin() + n);
      if (c.got.size() < config_.request_bytes) continue;
      if (c.got != c.expect) {
        std::size_t j = 0;
        while (c.got[j] == c.expect[j]) ++j;
        fail_session(s, "netmix's load generator: reply " + std::to_string(c.next) + " on connection " +
                            std::to_string(c.index + 1) + " differs from its request at byte " + std::to_string(j));
        return;
      }
      c.outstanding = false;
      s.latency.record(now > c.intended_ns ? now - c.intended_ns : 0);
      s.last_reply_ns = now;
      if (++s.replies == s.total) {
        end_session(s, "");
      } else {
        try_send(s, c.index);  // may fail the session and close c: read no more now (epoll is
      }                        // level-triggered: what is left is reported again)
      return;
    }
  };

  epoll_event events[64];
  for (;;) {
    const bool open = std::any_of(sessions.begin(), sessions.end(), [](const Session& s) { return !s.ended; });
    // With a session open, wake at least once a second to watch for a stall.
    const int n = ::epoll_wait(endpoint_.epoll_fd(), events, 64, open ? 1000 : -1);
    if (n < 0 && errno != EINTR) break;  // cannot happen with valid descriptors; the sessions time out
    bool stop = false;
    for (int i = 0; i < std::max(n, 0); ++i) {
      const std::uint64_t tag = events[i].data.u64;
      if (tag == LoopbackEndpoint::kStopTag) {
        stop = true;
      } else if (tag == LoopbackEndpoint::kListenTag) {
        accept_all();
      } else if (tag == LoopbackEndpoint::kTimerTag) {
        std::uint64_t expirations;
        (void)!::read(endpoint_.timer_fd(), &expirations, sizeof expirations);
        schedule(now_ns());
      } else {
        auto it = connections.find(static_cast<int>(tag));
        if (it == connections.end()) continue;  // closed earlier in this batch
        Connection& c = *it->second;
        if ((events[i].events & EPOLLOUT) != 0 && !flush(c)) continue;
        if ((events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) receive(c);
      }
    }
    if (stop) break;
    const std::uint64_t now = now_ns();
    for (Session& s : sessions) {
      if (!s.ended && now - s.last_progress_ns > static_cast<std::uint64_t>(stall_.count())) {
        fail_session(s, "netmix's load generator heard nothing from its session's server for " +
                            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(stall_).count()) +
                            " s and reset its connections (a server task that never ran again?)");
      }
    }
    // A session that ended and whose connections are all closed is forgotten.
    std::erase_if(sessions, [](const Session& s) {
      return s.ended && std::all_of(s.conns.begin(), s.conns.end(), [](const Connection* c) { return c == nullptr; });
    });
  }
  for (Session& s : sessions) end_session(s, "netmix's load generator stopped with the session open");
  while (!connections.empty()) close_connection(connections.begin()->first, false);
}

}  // namespace schedlab
