// netmix's failures and resources: a refused or reset connection names the connection and the
// errno, a reply that differs from its request is caught, every descriptor is closed after each
// repetition and at the end (also after a failure), and an open-file limit too low for --conns is
// refused before anything runs.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "loopback.hpp"
#include "netmix/netmix.hpp"
#include "registry.hpp"

namespace schedlab {
namespace {

int open_descriptors() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.' ? 1 : 0;
  ::closedir(d);
  return n - 1;  // the directory stream's own descriptor
}

NetmixParams small(std::uint16_t port = 0) {
  NetmixParams p;
  p.conns = 4;
  p.requests = 3;
  p.iters = 100;
  p.connect_port = port;
  return p;
}

// A listening socket on 127.0.0.1 and a thread that treats each accepted connection with
// `serve` (which closes it), for servers that misbehave.
class TestServer {
 public:
  template <class Serve>
  explicit TestServer(std::size_t connections, Serve serve) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 64), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, connections, serve] {
      for (std::size_t i = 0; i < connections; ++i) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        serve(c);
      }
    });
  }
  ~TestServer() {
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

using test_util::refusing_port;

// Runs w once under `scheduler` (2 workers) and returns the run's error, "" if none.
std::string run_error(const std::string& scheduler, Workload& w) {
  auto s = make_scheduler(scheduler, 2);
  try {
    s->run([&] { w.run(); });
  } catch (const std::exception& e) {
    return e.what();
  }
  return w.check();
}

const std::vector<std::string> kSchedulers = {"steal-half", "central", "os-threads"};

TEST(Netmix, ARefusedConnectionNamesTheConnectionAndTheErrno) {
  const int before = open_descriptors();
  const std::uint16_t port = refusing_port();
  for (const std::string& s : kSchedulers) {
    SCOPED_TRACE(s);
    auto w = make_netmix(small(port));
    w->prepare();
    const std::string error = run_error(s, *w);
    EXPECT_NE(error.find("netmix connection "), std::string::npos) << error;
    EXPECT_NE(error.find(" of 4: cannot connect to 127.0.0.1:" + std::to_string(port) +
                         ": Connection refused (ECONNREFUSED)"),
              std::string::npos)
        << error;
    w->cleanup();
  }
  EXPECT_EQ(open_descriptors(), before) << "a failed run left descriptors open";
}

TEST(Netmix, AResetConnectionNamesTheConnectionAndTheErrno) {
  TestServer resets(4, [](int c) {
    char request[64];
    (void)!::read(c, request, sizeof request);  // the first request, then a reset instead of a reply
    const linger abort{1, 0};
    ::setsockopt(c, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::close(c);
  });
  auto w = make_netmix(small(resets.port()));
  w->prepare();
  const std::string error = run_error("steal-half", *w);
  EXPECT_NE(error.find("netmix connection "), std::string::npos) << error;
  EXPECT_NE(error.find("cannot read reply 1 from 127.0.0.1:" + std::to_string(resets.port()) +
                       ": Connection reset by peer (ECONNRESET)"),
            std::string::npos)
      << error;
  w->cleanup();
}

TEST(Netmix, AWrongReplyIsCaught) {
  NetmixParams p = small();
  p.conns = 1;
  p.requests = 2;
  TestServer corrupts(1, [](int c) {
    unsigned char request[64];
    for (int r = 0; r < 2; ++r) {
      std::size_t got = 0;
      while (got < sizeof request) {
        const ssize_t n = ::read(c, request + got, sizeof request - got);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
      }
      if (r == 1) request[17] ^= 0x40;  // the second reply has one wrong byte
      (void)!::write(c, request, sizeof request);
    }
    ::close(c);
  });
  p.connect_port = corrupts.port();
  auto w = make_netmix(p);
  w->prepare();
  const std::string error = run_error("steal-half", *w);
  EXPECT_NE(error.find("netmix connection 1 of 1: reply 2 differs from its request at byte 17"), std::string::npos)
      << error;
  w->cleanup();
}

TEST(Netmix, EveryDescriptorIsClosedAfterEachRepetitionAndAtTheEnd) {
  const int before = open_descriptors();
  struct Variant {
    const char* scheduler;
    ParamValues params;
  };
  for (const Variant& v : std::vector<Variant>{{"steal-half", {}}, {"steal-half", {{"netpoll", "off"}}},
                                               {"fair", {}}, {"central", {}}, {"os-threads", {}}, {"serial", {}}}) {
    SCOPED_TRACE(std::string(v.scheduler) + (v.params.empty() ? "" : " netpoll=off"));
    auto sched = make_scheduler(v.scheduler, 2, v.params);
    auto w = make_netmix(small());
    w->prepare();
    const int prepared = open_descriptors();
    int after_first = -1;
    for (int rep = 0; rep < 3; ++rep) {
      sched->run([&] { w->run(); });
      EXPECT_EQ(w->check(), "");  // waits until the server has closed its ends too
      // The scheduler's poller (an epoll instance and its eventfd) is made in the first run and
      // kept for the next: nothing else may stay open.
      if (rep == 0) after_first = open_descriptors();
      EXPECT_LE(after_first, prepared + 2);
      EXPECT_EQ(open_descriptors(), after_first) << "rep " << rep << ": a socket was left open";
    }
    w->run_elision();
    EXPECT_EQ(w->check(), "");
    EXPECT_EQ(open_descriptors(), after_first);
    w->cleanup();
    sched.reset();
    EXPECT_EQ(open_descriptors(), before) << "the server's or the poller's descriptors were left open";
  }
}

TEST(Netmix, AnOpenFileLimitTooLowIsRefusedWithTheFigureNeeded) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = 128;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  NetmixParams p = small();
  p.conns = 200;
  std::string error;
  try {
    (void)make_netmix(p);
  } catch (const std::invalid_argument& e) {
    error = e.what();
  }
  p.conns = 20;
  EXPECT_NO_THROW((void)make_netmix(p)) << "20 connections fit in 128 descriptors";
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_NE(error.find("--conns 200 needs about 4"), std::string::npos) << error;  // 400 and some
  EXPECT_NE(error.find("ulimit -n is 128"), std::string::npos) << error;
  EXPECT_NE(error.find("use fewer --conns"), std::string::npos) << error;
}

}  // namespace
}  // namespace schedlab
