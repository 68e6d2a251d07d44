// load_generator.hpp: netmix's open-loop load generator (--load open), wrk2's idea on loopback.
//
// In the closed loop (echo_server.hpp) the tasks under test are clients: each sends a request
// and waits for its reply before the next, so a slow scheduler slows the load it is measured
// under and its stalls never show as latency. Here the roles turn around. The generator is a
// thread of its own, outside the scheduler under test (as the echo server is), listening on
// 127.0.0.1; the workload's tasks are the server, one per connection (read a request, compute
// --iters, reply). The generator sends the requests on a schedule fixed in advance, --rate per
// second over all connections (request k of the session intended at t0 + offset(k): fixed
// spacing, or a Poisson process; request k on connection k mod --conns), and measures each
// request from its **intended** send time to the end of its reply. A connection has one request
// outstanding at a time (as wrk2's do): one that comes due while the previous is unanswered is
// sent the moment that reply ends, and its latency still counts from when it was due. So a
// server that stalls for 100 ms shows a hundred milliseconds of latency on every request that
// came due meanwhile, not on one: no coordinated omission (Gil Tene's term, and wrk2's fix).
//
// A session is one run of the server: the next --conns connections accepted, in accept order
// (connection c of the session), --requests requests each. Its schedule starts at its first
// accept (t0), so a server that connects its connections one after another (the sequential
// elision, a thread held by a blocked one) pays for the wait in latency too. The session ends
// with its last reply; its result (the latency histogram, the rate achieved) is kept until taken.
// Any server may serve a session (the in-process tasks, the Go twin, workloads/go/netmix.go):
// it only needs to connect --conns times and echo each request.
//
// The generator gives up rather than hang, as the echo server does: with a session open and no
// byte moving for stall_after(), it resets the session's connections and says so in the result.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include "latency.hpp"
#include "loopback_endpoint.hpp"

namespace schedlab {

enum class Arrivals { fixed, poisson };

// The intended send times of one session, offset from its start, in order: request k at
// k x 10^9 / rate ns (fixed), or after exponential gaps of mean 10^9 / rate ns drawn from a
// generator seeded with `seed` (poisson: the same seed gives the same schedule).
class ArrivalClock {
 public:
  ArrivalClock(std::uint64_t rate_per_s, Arrivals arrivals, std::uint64_t seed);
  // The offset of the next request (the first is 0).
  std::uint64_t next_offset_ns();

 private:
  const std::uint64_t rate_;
  const Arrivals arrivals_;
  std::mt19937_64 random_;
  std::exponential_distribution<double> gap_;
  std::uint64_t k_ = 0;
  double poisson_ns_ = 0;
};

struct LoadGeneratorConfig {
  std::uint64_t conns = 1;          // connections per session
  std::uint64_t requests = 1;       // requests per connection
  std::uint64_t request_bytes = 1;  // each request's size; the reply must echo it
  std::uint64_t rate_per_s = 1000;  // offered load, over all connections
  Arrivals arrivals = Arrivals::fixed;
  std::uint64_t seed = 1;           // the Poisson schedule's
};

// What one session measured.
struct LoadSession {
  LatencyDistribution latency;  // every request, from its intended send time to its reply's end
  std::uint64_t replies = 0;
  double rate_per_s = 0;        // replies over the time from the schedule's start to the last reply
  std::string error;            // empty if every reply came and echoed its request
};

class LoadGenerator {
 public:
  // Listens on 127.0.0.1 (an ephemeral port) and starts the thread. Throws std::runtime_error
  // naming the call, the errno and the fix when a socket, epoll or the thread cannot be had. The
  // destructor stops the thread and closes every descriptor (LoopbackEndpoint).
  explicit LoadGenerator(LoadGeneratorConfig config);
  LoadGenerator(const LoadGenerator&) = delete;
  LoadGenerator& operator=(const LoadGenerator&) = delete;

  std::uint16_t port() const noexcept { return endpoint_.port(); }
  // The last session that ended since the last take, waiting up to `timeout` for one to end
  // with none left open (a session still open then is reported as an error in the result);
  // nullopt if none began (no server connected). Any thread.
  std::optional<LoadSession> take_session(std::chrono::milliseconds timeout);
  // How long the generator waits for a byte to move in an open session before it resets it.
  std::chrono::nanoseconds stall_after() const noexcept { return stall_; }

 private:
  struct Session;
  struct Connection;
  void serve() noexcept;

  const LoadGeneratorConfig config_;
  const std::chrono::nanoseconds stall_;

  std::mutex mutex_;
  std::condition_variable ended_;
  std::optional<LoadSession> last_;  // guarded by mutex_
  unsigned open_sessions_ = 0;       // guarded by mutex_: begun and not ended
  // Last, so destroyed first: its serving thread is stopped while the rest is whole.
  LoopbackEndpoint endpoint_;
};

}  // namespace schedlab
