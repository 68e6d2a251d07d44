// echo_server.hpp: netmix's server, the remote end of every connection (see netmix.cpp).
//
// One thread of its own, outside every scheduler, serving every connection with one epoll
// instance: what it costs is the same whichever scheduler runs the clients, and it never
// competes for a scheduler's workers. It listens on 127.0.0.1 only (an ephemeral port) and
// echoes each byte it receives, `delay_us` after it arrived when a delay is set (a timerfd in
// the same epoll set, so that a 200 µs delay is 200 µs and not epoll_wait's millisecond), to
// stand in for a remote service's latency.
//
// It gives up rather than hang: when it has open connections and none of them sent a byte for
// stall_after() (a client task lost by its scheduler would otherwise wait for ever), it resets
// them all, which wakes every waiting client with an error, and says so in error(). An accept
// it cannot make (out of descriptors) closes the listening socket, so that connections waiting
// in the backlog are reset rather than left unanswered, and says so too.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "loopback_endpoint.hpp"

namespace schedlab {

class EchoServer {
 public:
  // Listens and starts the serving thread. Throws std::runtime_error naming the call, the errno
  // and the fix when a socket, an epoll instance or the thread cannot be had.
  // The destructor stops the thread and closes every descriptor it had (LoopbackEndpoint).
  explicit EchoServer(std::uint64_t delay_us);
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  std::uint16_t port() const noexcept { return endpoint_.port(); }

  // Bytes received since the last reset_counts(); any thread.
  std::uint64_t bytes_received() const noexcept { return received_.load(std::memory_order_acquire); }
  void reset_counts() noexcept { received_.store(0, std::memory_order_release); }
  // Connections accepted and not yet closed on this side; any thread.
  std::uint64_t open_connections() const noexcept { return open_.load(std::memory_order_acquire); }
  // Waits until the server has closed every connection (it closes one when the client does), at
  // most `timeout`: false if some are still open then.
  bool wait_until_idle(std::chrono::milliseconds timeout) const;
  // What went wrong on the server's side, empty if nothing did; any thread.
  std::string error() const;
  // How long the server waits for a byte from any of its open connections before it resets them.
  std::chrono::nanoseconds stall_after() const noexcept { return stall_; }

 private:
  void serve() noexcept;
  void fail(std::string why);

  const std::uint64_t delay_us_;
  const std::chrono::nanoseconds stall_;
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> open_{0};
  mutable std::mutex error_mutex_;
  std::string error_;  // guarded by error_mutex_
  // Last, so destroyed first: its serving thread is stopped while the rest is whole.
  LoopbackEndpoint endpoint_;
};

}  // namespace schedlab
