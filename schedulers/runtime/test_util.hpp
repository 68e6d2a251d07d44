// test_util.hpp: what the runtime's tests share (not part of the library).
//
// A thread's state is read from the kernel, not guessed from elapsed time: a thread blocked in a
// system call names it in /proc/self/task/TID/syscall while it waits.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <utility>

#include "api.hpp"

namespace schedlab::test_util {

// The number of the system call thread `tid` of this process is blocked in, -1 if it is running.
inline long blocked_in(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string first;
  if (!(in >> first) || first == "running") return -1;
  return std::stol(first);
}

// A connected pair of non-blocking stream sockets: fd[0] the end a task waits on, fd[1] the
// peer that writes to it. Closes what it still owns.
struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd), 0); }
  ~SocketPair() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;
  // The waiting end, as a Socket that owns it from now on.
  Socket take_reader() { return Socket(std::exchange(fd[0], -1)); }
  void send_byte() const { ASSERT_EQ(::write(fd[1], "x", 1), 1); }
};

}  // namespace schedlab::test_util
