// netmix: --conns connections over loopback TCP, each a task that computes, sends a request
// and waits for its reply, --requests times.
//
// The seeds' other half of Go's I/O story: a goroutine in a network call does not block its
// thread. It parks on the network poller, the thread and its P go on running other goroutines,
// and the socket's readiness puts it back on a run queue. iomix's file reads are the half
// where the thread does block and the P is handed over; here every wait is on a socket
// (api.hpp: Socket, X::read_full), and what the scheduler does with it is the measurement:
// the fiber schedulers park the task on their poller (--netpoll on), or wait in poll(2)
// holding the thread (--netpoll off: steal-half then hands its P to another thread, one per
// waiting connection); tbb, openmp, boost-fiber, serial and os-threads wait in poll(2), the
// thread held; go-runtime runs the Go twin (workloads/go/netmix.go) with Go's own poller
// against the same server.
//
// The server (echo_server.hpp) runs on a thread of its own, outside every scheduler, started by
// prepare() and stopped by cleanup(): it echoes each request, --server-delay-us after it came
// (a remote service's latency), on 127.0.0.1 only. A connection task connects (non-blocking),
// then for each request runs --iters increments of CPU work (workloads/spin.hpp), writes a
// --request-bytes request whose bytes depend on the connection, the request and the position
// (netmix_request_byte), and reads the whole reply, which must be those bytes exactly. It
// closes its socket when done. The check: every reply byte for byte, the reply count, the bytes
// the server received, and every connection closed on the server's side too.
//
// Failures name the connection and the errno (a refused connect, a reset, the server's end of
// file before the last reply) and fail the run; the other connections finish and close their
// sockets. The open-file limit is checked when the workload is made, before anything runs:
// both ends of every connection are in this process.
//
// --load open turns the roles around (load_generator.hpp, wrk2's open loop): prepare() starts a
// load generator instead of the echo server, on a thread of its own, and each connection task
// is a server: it connects to the generator, then --requests times reads a request whole,
// computes --iters increments and writes the request back as its reply. The generator sends
// the requests at --rate per second (--arrivals fixed or poisson, --seed) and measures each from
// its intended send time to its reply: the rows' request_* columns (Workload::request_latency).
// The check: every reply byte for byte, as the generator saw it, and every request served. The
// Go twin serves the same generator (workloads/go/netmix.go).
#include "netmix.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "../spin.hpp"
#include "api.hpp"
#include "echo_server.hpp"
#include "errno_text.hpp"

namespace schedlab {
namespace {

// Descriptors the run needs besides two per connection: the listening socket, the server's
// epoll, timer and stop descriptors, the poller's epoll and eventfd, and room for the harness's
// output files.
constexpr std::uint64_t kFixedDescriptors = 16;

// How long check() waits for the server to close the connections the clients closed (it sees
// each end of file within microseconds; this is for a machine slowed by other work).
constexpr std::chrono::seconds kServerCloseWait{10};

std::uint64_t open_descriptors() {
  std::uint64_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.' ? 1 : 0;
    ::closedir(d);
  }
  return n;
}

class NetmixWorkload final : public ElidableWorkload<NetmixWorkload> {
 public:
  explicit NetmixWorkload(NetmixParams p) : params_(p) {}
  ~NetmixWorkload() override { cleanup(); }

  void prepare() override {
    if (params_.load == NetmixLoad::open) {
      generator_ = std::make_unique<LoadGenerator>(LoadGeneratorConfig{
          params_.conns, params_.requests, params_.request_bytes, params_.rate, params_.arrivals, params_.seed});
    } else {
      server_ = std::make_unique<EchoServer>(params_.server_delay_us);
    }
  }

  template <class X>
  void body() {
    if (params_.load == NetmixLoad::open) {
      served_.store(0, std::memory_order_relaxed);
      increments_.store(0, std::memory_order_relaxed);
      typename X::WaitGroup wg;
      for (std::uint64_t c = 0; c < params_.conns; ++c) wg.go([this, c] { serve<X>(c); });
      wg.wait();
      return;
    }
    server_->reset_counts();
    replies_.store(0, std::memory_order_relaxed);
    increments_.store(0, std::memory_order_relaxed);
    {
      std::lock_guard lock(mismatch_mutex_);
      mismatch_.clear();
    }
    typename X::WaitGroup wg;
    for (std::uint64_t c = 0; c < params_.conns; ++c) wg.go([this, c] { connection<X>(c); });
    wg.wait();
  }

  std::string check() override {
    if (params_.load == NetmixLoad::open) {
      const std::uint64_t want = params_.conns * params_.requests;
      if (served_.load() != want) {
        return "netmix served " + std::to_string(served_.load()) + " requests, expected " + std::to_string(want);
      }
      if (increments_.load() != want * params_.iters) {
        return "netmix counted " + std::to_string(increments_.load()) + " increments, expected " +
               std::to_string(want * params_.iters);
      }
      return check_external();
    }
    {
      std::lock_guard lock(mismatch_mutex_);
      if (!mismatch_.empty()) return mismatch_;
    }
    const std::uint64_t want = params_.conns * params_.requests;
    if (replies_.load() != want) {
      return "netmix verified " + std::to_string(replies_.load()) + " replies, expected " + std::to_string(want);
    }
    if (increments_.load() != want * params_.iters) {
      return "netmix counted " + std::to_string(increments_.load()) + " increments, expected " +
             std::to_string(want * params_.iters);
    }
    if (params_.connect_port == 0) {
      if (server_->bytes_received() != want * params_.request_bytes) {
        return "netmix's server received " + std::to_string(server_->bytes_received()) + " bytes, expected " +
               std::to_string(want * params_.request_bytes);
      }
      if (!server_->wait_until_idle(kServerCloseWait)) {
        return "netmix's server still has " + std::to_string(server_->open_connections()) +
               " connections open " + std::to_string(kServerCloseWait.count()) + " s after the run";
      }
    }
    if (std::string error = server_->error(); !error.empty()) return error;
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override { return params_.conns; }

  // The generator's word on the session the last run served (open loop), kept for
  // request_latency(); closed loop: nothing to add.
  std::string check_external() override {
    if (params_.load != NetmixLoad::open) return {};
    last_session_ = generator_->take_session(kServerCloseWait);
    if (!last_session_) return "netmix's load generator saw no session: no connection reached it";
    if (!last_session_->error.empty()) return last_session_->error;
    const std::uint64_t want = params_.conns * params_.requests;
    if (last_session_->replies != want) {
      return "netmix's load generator received " + std::to_string(last_session_->replies) + " replies, expected " +
             std::to_string(want);
    }
    return {};
  }

  std::optional<RequestLatency> request_latency() const override {
    if (!last_session_ || !last_session_->error.empty()) return std::nullopt;
    return RequestLatency{last_session_->latency, last_session_->rate_per_s};
  }

  void cleanup() override {
    server_.reset();
    generator_.reset();
  }

  std::vector<std::pair<std::string, std::string>> external_args() const override {
    return {{"port", std::to_string(port())}};
  }

 private:
  std::uint16_t port() const {
    if (params_.connect_port != 0) return params_.connect_port;
    return generator_ ? generator_->port() : server_->port();
  }

  // One connection of the open loop, as its task: the server's side. Throws std::runtime_error
  // naming the connection and the errno when the connection fails.
  template <class X>
  void serve(std::uint64_t c) {
    Socket s = connect<X>(c);
    const std::string where = "127.0.0.1:" + std::to_string(port());
    std::vector<unsigned char> request(params_.request_bytes);
    std::uint64_t done = 0, served = 0;
    for (std::uint64_t r = 0; r < params_.requests; ++r) {
      const IoResult got = X::read_full(s, request.data(), request.size());
      if (got.error != 0) fail(c, "cannot read request " + std::to_string(r + 1) + " from " + where, got.error);
      if (got.bytes < request.size()) {
        throw std::runtime_error(connection_name(c) + ": the load generator at " + where +
                                 " closed the connection after " + std::to_string(r) + " of " +
                                 std::to_string(params_.requests) + " requests");
      }
      done += count_up(params_.iters);
      const IoResult sent = X::write_full(s, request.data(), request.size());
      if (sent.error != 0) fail(c, "cannot send reply " + std::to_string(r + 1) + " to " + where, sent.error);
      ++served;
    }
    served_.fetch_add(served, std::memory_order_relaxed);
    increments_.fetch_add(done, std::memory_order_relaxed);
  }

  // A non-blocking TCP connection to port() on 127.0.0.1, connected, TCP_NODELAY as Go's net.
  template <class X>
  Socket connect(std::uint64_t c) {
    const std::uint16_t port = this->port();
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!s.is_open()) fail(c, "cannot create its socket", errno);
    const int one = 1;
    ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as Go's net does by default
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const std::string where = "127.0.0.1:" + std::to_string(port);
    if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      if (errno != EINPROGRESS) fail(c, "cannot connect to " + where, errno);
      X::wait_writable(s);
      int error = 0;
      socklen_t len = sizeof error;
      if (::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
      if (error != 0) fail(c, "cannot connect to " + where, error);
    }
    return s;
  }

  // One connection's life, as its task. Throws std::runtime_error naming the connection and the
  // errno when the connection fails; its socket is closed on every path (Socket's destructor).
  template <class X>
  void connection(std::uint64_t c) {
    Socket s = connect<X>(c);
    const std::string where = "127.0.0.1:" + std::to_string(port());
    // On the heap: fiber stacks are small and a request may be 64 KiB.
    std::vector<unsigned char> request(params_.request_bytes), reply(params_.request_bytes);
    std::uint64_t done = 0, verified = 0;
    for (std::uint64_t r = 0; r < params_.requests; ++r) {
      done += count_up(params_.iters);
      for (std::uint64_t j = 0; j < request.size(); ++j) request[j] = netmix_request_byte(c, r, j);
      const IoResult sent = X::write_full(s, request.data(), request.size());
      if (sent.error != 0) fail(c, "cannot send request " + std::to_string(r + 1) + " to " + where, sent.error);
      const IoResult got = X::read_full(s, reply.data(), reply.size());
      if (got.error != 0) fail(c, "cannot read reply " + std::to_string(r + 1) + " from " + where, got.error);
      if (got.bytes < reply.size()) {
        std::string why = "the server at " + where + " closed the connection after " + std::to_string(r) + " of " +
                          std::to_string(params_.requests) + " replies";
        if (std::string server = server_->error(); !server.empty()) why += " (" + server + ")";
        throw std::runtime_error(connection_name(c) + ": " + why);
      }
      if (reply == request) {
        ++verified;
      } else {
        note_mismatch(c, r, request, reply);
      }
    }
    replies_.fetch_add(verified, std::memory_order_relaxed);
    increments_.fetch_add(done, std::memory_order_relaxed);
  }

  std::string connection_name(std::uint64_t c) const {
    return "netmix connection " + std::to_string(c + 1) + " of " + std::to_string(params_.conns);
  }

  [[noreturn]] void fail(std::uint64_t c, const std::string& what, int err) const {
    std::string why = connection_name(c) + ": " + what + ": " + errno_text(err);
    if (err == EMFILE || err == ENFILE) why += "; raise the open-file limit (ulimit -n) or use fewer --conns";
    if (std::string server = server_ ? server_->error() : std::string(); !server.empty()) why += " (" + server + ")";
    throw std::runtime_error(why);
  }

  void note_mismatch(std::uint64_t c, std::uint64_t r, const std::vector<unsigned char>& sent,
                     const std::vector<unsigned char>& got) {
    std::size_t j = 0;
    while (j < sent.size() && sent[j] == got[j]) ++j;
    char what[160];
    std::snprintf(what, sizeof what, ": reply %llu differs from its request at byte %zu (got 0x%02x, sent 0x%02x)",
                  static_cast<unsigned long long>(r + 1), j, got[j], sent[j]);
    std::lock_guard lock(mismatch_mutex_);
    if (mismatch_.empty()) mismatch_ = connection_name(c) + what;
  }

  const NetmixParams params_;
  std::unique_ptr<EchoServer> server_;        // closed loop: from prepare() to cleanup()
  std::unique_ptr<LoadGenerator> generator_;  // open loop: from prepare() to cleanup()
  std::optional<LoadSession> last_session_;   // open loop: the last run's, once checked
  std::atomic<std::uint64_t> served_{0};      // open loop: requests the tasks answered
  std::atomic<std::uint64_t> replies_{0};
  std::atomic<std::uint64_t> increments_{0};
  std::mutex mismatch_mutex_;
  std::string mismatch_;  // the first reply that differed; guarded by mismatch_mutex_
};

}  // namespace

std::unique_ptr<Workload> make_netmix(NetmixParams params) {
  if (params.conns == 0) throw std::invalid_argument("--conns 0: netmix needs at least one connection");
  if (params.request_bytes == 0) throw std::invalid_argument("--request-bytes 0: a request needs at least one byte");
  if (params.load == NetmixLoad::open && params.server_delay_us != 0) {
    throw std::invalid_argument("--server-delay-us " + std::to_string(params.server_delay_us) +
                                ": the echo server's delay applies to --load closed; the open loop's tasks are the "
                                "server (use --server-delay-us 0 with --load open)");
  }
  const NetmixParams defaults;
  if (params.load == NetmixLoad::closed && (params.rate != defaults.rate || params.arrivals != defaults.arrivals)) {
    throw std::invalid_argument("--rate and --arrivals apply to --load open (the closed loop's clients send as fast "
                                "as their replies come); add --load open, or drop them");
  }
  if (params.load == NetmixLoad::open && params.rate == 0) {
    throw std::invalid_argument("--rate 0: an open-loop load needs at least one request a second");
  }
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    const std::uint64_t open_now = open_descriptors();
    const std::uint64_t need = open_now + 2 * params.conns + kFixedDescriptors;
    if (need > files.rlim_cur) {
      const std::string hard =
          files.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(static_cast<std::uint64_t>(files.rlim_max));
      throw std::invalid_argument(
          "--conns " + std::to_string(params.conns) + " needs about " + std::to_string(need) +
          " open files (both ends of each connection are in this process, plus " +
          std::to_string(open_now + kFixedDescriptors) + " for the server, the poller and what is open now), but "
          "ulimit -n is " + std::to_string(static_cast<std::uint64_t>(files.rlim_cur)) + " (hard limit " + hard +
          "); raise it (ulimit -n " + std::to_string(need) + ") or use fewer --conns");
    }
  }
  return std::make_unique<NetmixWorkload>(params);
}

}  // namespace schedlab
