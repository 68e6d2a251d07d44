// loopback_endpoint.hpp: what netmix's two servers outside the scheduler under test share (the
// echo server, echo_server.hpp; the open loop's load generator, load_generator.hpp): a listening
// socket on 127.0.0.1 (an ephemeral port), an epoll instance watching it with a timer and a stop
// eventfd, each tagged, and the thread that serves them until stopped.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

namespace schedlab {

class LoopbackEndpoint {
 public:
  // epoll data of the endpoint's own descriptors; a connection's is its descriptor (below 2^31).
  static constexpr std::uint64_t kListenTag = std::uint64_t{1} << 40;
  static constexpr std::uint64_t kTimerTag = kListenTag + 1;
  static constexpr std::uint64_t kStopTag = kListenTag + 2;

  // Listens and watches, no thread yet. `who` names the server in errors ("netmix's echo
  // server"), `timer` what its timer is for ("reply timer"). Throws std::runtime_error naming the
  // call, the errno and the fix; nothing stays open then.
  LoopbackEndpoint(std::string who, const char* timer);
  // Stops and joins the thread (if started) and closes every descriptor.
  ~LoopbackEndpoint();
  LoopbackEndpoint(const LoopbackEndpoint&) = delete;
  LoopbackEndpoint& operator=(const LoopbackEndpoint&) = delete;

  // Runs `serve` on a thread of its own until it returns (it should once it reads kStopTag).
  void start(std::function<void()> serve);
  std::runtime_error error(const std::string& what, int err) const;

  std::uint16_t port() const noexcept { return port_; }
  int epoll_fd() const noexcept { return epoll_fd_; }
  int timer_fd() const noexcept { return timer_fd_; }
  int listen_fd() const noexcept { return listen_fd_; }
  // Stops watching and closes the listening socket (an accept that cannot be made: connections
  // still waiting in the backlog are reset rather than left unanswered). Serving thread only.
  void close_listener() noexcept;

 private:
  void close_all() noexcept;

  const std::string who_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  int stop_fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace schedlab
