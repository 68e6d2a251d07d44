// netmix's open-loop load generator (workloads/netmix/load_generator.hpp): its schedule of
// intended send times, and its coordinated-omission accounting: a server that stalls shows the
// stall on every request that came due meanwhile, counted from when each was due. The servers
// here are plain threads with blocking sockets, so that the stall is the test's, not a
// scheduler's. No timing thresholds: the bounds below follow from the schedule alone (a reply
// cannot come before the stall ends), whatever the machine's speed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "netmix/load_generator.hpp"
#include "netmix/netmix.hpp"

namespace schedlab {
namespace {

using namespace std::chrono_literals;

TEST(ArrivalClock, FixedSpacingIsExactlyOnePeriodApart) {
  ArrivalClock clock(3000, Arrivals::fixed, 1);
  for (std::uint64_t k = 0; k < 10000; ++k) {
    ASSERT_EQ(clock.next_offset_ns(), k * 1'000'000'000u / 3000) << "request " << k;
  }
}

TEST(ArrivalClock, PoissonIsReproducibleOrderedAndAtTheRate) {
  ArrivalClock a(5000, Arrivals::poisson, 42), b(5000, Arrivals::poisson, 42), c(5000, Arrivals::poisson, 43);
  const std::size_t n = 200000;
  std::uint64_t last = 0;
  bool differs = false;
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t t = a.next_offset_ns();
    ASSERT_EQ(t, b.next_offset_ns()) << "the same seed gives the same schedule";
    differs = differs || t != c.next_offset_ns();
    if (k == 0) {
      ASSERT_EQ(t, 0u);
    } else {
      ASSERT_GE(t, last);
    }
    last = t;
  }
  EXPECT_TRUE(differs) << "another seed gives another schedule";
  // The mean gap of 200,000 exponential gaps is within 1% of 1/rate (its standard error is
  // 0.22%); a fixed seed makes this a fixed number, not a chance.
  const double mean_gap = static_cast<double>(last) / static_cast<double>(n - 1);
  EXPECT_NEAR(mean_gap, 1e9 / 5000, 0.01 * 1e9 / 5000);
}

// A server on a thread of its own: connects `conns` times to the generator and echoes each
// request, calling before_reply(connection, request number) first (the test's stall).
class EchoingServer {
 public:
  EchoingServer(std::uint16_t port, std::uint64_t conns, std::uint64_t requests, std::uint64_t bytes,
                std::function<void(std::uint64_t, std::uint64_t)> before_reply) {
    for (std::uint64_t c = 0; c < conns; ++c) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(port);
      EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
      fds_.push_back(fd);
    }
    // One thread serves the connections in turn, a request at a time, in the order the
    // generator sends them (request k on connection k mod conns, one outstanding each).
    thread_ = std::thread([this, conns, requests, bytes, before_reply] {
      std::vector<char> buffer(bytes);
      for (std::uint64_t k = 0; k < conns * requests; ++k) {
        const int fd = fds_[k % conns];
        std::size_t got = 0;
        while (got < bytes) {
          const ssize_t n = ::read(fd, buffer.data() + got, bytes - got);
          if (n <= 0) return;
          got += static_cast<std::size_t>(n);
        }
        before_reply(k % conns, k / conns);
        if (::write(fd, buffer.data(), bytes) != static_cast<ssize_t>(bytes)) return;
      }
    });
  }
  ~EchoingServer() {
    thread_.join();
    for (int fd : fds_) ::close(fd);
  }

 private:
  std::vector<int> fds_;
  std::thread thread_;
};

TEST(LoadGenerator, EveryRequestAnsweredAndCheckedAtTheRate) {
  LoadGenerator generator({/*conns=*/3, /*requests=*/20, /*request_bytes=*/64, /*rate=*/20000, Arrivals::fixed, 1});
  std::optional<LoadSession> session;
  {
    EchoingServer server(generator.port(), 3, 20, 64, [](std::uint64_t, std::uint64_t) {});
    session = generator.take_session(10s);
  }
  ASSERT_TRUE(session.has_value());
  EXPECT_EQ(session->error, "");
  EXPECT_EQ(session->replies, 60u);
  EXPECT_EQ(session->latency.count(), 60u);
  EXPECT_GT(session->rate_per_s, 0.0);
  EXPECT_FALSE(generator.take_session(0ms).has_value()) << "a session is taken once";
}

TEST(LoadGenerator, AStallCountsOnEveryRequestThatCameDueDuringIt) {
  // 1000 requests a second on one connection, 100 requests: request k is due at k ms. The
  // server holds its reply to request 5 for 100 ms. Request 5 cannot be sent before it is due
  // (5 ms), so every reply from request 5 on ends after 105 ms: request k (k >= 5) waited at
  // least 105 - k ms from its intended time. At least 51 of them (k = 5 .. 55) waited 50 ms
  // or more, so the median is at least 50 ms. Measured from when each was actually sent (the
  // coordinated omission wrk2 fixes), only request 5 would show the stall.
  static constexpr std::uint64_t kStallMs = 100;
  LoadGenerator generator({1, 100, 32, 1000, Arrivals::fixed, 1});
  std::optional<LoadSession> session;
  {
    EchoingServer server(generator.port(), 1, 100, 32, [](std::uint64_t, std::uint64_t r) {
      if (r == 5) std::this_thread::sleep_for(std::chrono::milliseconds(kStallMs));
    });
    session = generator.take_session(20s);
  }
  ASSERT_TRUE(session.has_value());
  ASSERT_EQ(session->error, "");
  ASSERT_EQ(session->latency.count(), 100u);
  const double bound = 1.0 - LatencyHistogram::kRelativeError;
  EXPECT_GE(static_cast<double>(*session->latency.percentile(50)), 50e6 * bound);
  EXPECT_GE(static_cast<double>(*session->latency.max()), static_cast<double>(kStallMs) * 1e6);
}

TEST(LoadGenerator, AWrongReplyFailsTheSession) {
  LoadGenerator generator({1, 3, 16, 10000, Arrivals::fixed, 1});
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(generator.port());
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  char request[16];
  ASSERT_EQ(::recv(fd, request, sizeof request, MSG_WAITALL), 16);
  request[3] ^= 1;
  ASSERT_EQ(::write(fd, request, sizeof request), 16);
  const std::optional<LoadSession> session = generator.take_session(10s);
  ::close(fd);
  ASSERT_TRUE(session.has_value());
  EXPECT_NE(session->error.find("differs from its request at byte 3"), std::string::npos) << session->error;
}

}  // namespace
}  // namespace schedlab
