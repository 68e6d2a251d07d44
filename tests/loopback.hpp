// loopback.hpp: what the harness-level network tests share (127.0.0.1 only).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace schedlab::test_util {

// A port on 127.0.0.1 nobody listens on: bound, read and closed again (another process could
// take it meanwhile; on a test machine none does), so that a connection to it is refused.
inline std::uint16_t refusing_port() {
  const int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  EXPECT_EQ(::getsockname(probe, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(probe);
  return ntohs(addr.sin_port);
}

}  // namespace schedlab::test_util
