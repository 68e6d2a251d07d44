// netmix: connections that compute, send a request and wait for its reply (see netmix.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"
#include "load_generator.hpp"

namespace schedlab {

// Who drives the load (--load): the tasks as clients of an echo server, each waiting for its
// reply before its next request (closed), or a load generator sending on a schedule of its own
// to the tasks as servers (open: load_generator.hpp).
enum class NetmixLoad { closed, open };

struct NetmixParams {
  std::uint64_t conns = 64;           // connections, one task each
  std::uint64_t requests = 100;       // requests per connection, each answered before the next
  std::uint64_t iters = 20000;        // increments of CPU work before each request (open: before each reply)
  std::uint64_t server_delay_us = 0;  // the echo server holds each reply this long (closed only)
  std::uint64_t request_bytes = 64;   // bytes per request (and per reply: the server echoes)
  NetmixLoad load = NetmixLoad::closed;
  std::uint64_t rate = 2000;          // open: requests per second, over all connections
  Arrivals arrivals = Arrivals::fixed;  // open: the schedule's spacing
  std::uint64_t seed = 1;               // open: the Poisson schedule's seed
  // Tests only: connect to this port on 127.0.0.1 instead of the workload's own server (a port
  // with no listener, a server that resets). 0: the workload's server.
  std::uint16_t connect_port = 0;
};

// Throws std::invalid_argument for parameters out of range and when the open-file limit
// (ulimit -n) is too low for --conns, naming the figure needed.
std::unique_ptr<Workload> make_netmix(NetmixParams params);

// Byte j of request r of connection c: what a reply must echo, the same in the Go twin
// (workloads/go/netmix.go).
inline unsigned char netmix_request_byte(std::uint64_t c, std::uint64_t r, std::uint64_t j) {
  return static_cast<unsigned char>((c * 131 + r * 31 + j * 7) % 251);
}

}  // namespace schedlab
