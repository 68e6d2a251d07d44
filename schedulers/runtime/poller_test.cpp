// Poller: the wait slots' protocol on real sockets, without a scheduler. A task here is a bare
// Task record that is parked and handed back, never run.
#include "poller.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "test_util.hpp"

namespace schedlab {
namespace {

using test_util::blocked_in;
using Pair = test_util::SocketPair;

std::size_t drain(TaskList& list) {
  std::size_t n = 0;
  while (list.pop_front() != nullptr) ++n;
  return n;
}

TEST(Poller, AParkedTaskIsHandedBackOnceWhenDataArrives) {
  Poller poller;
  Pair pair;
  PollDesc* d = poller.open(pair.fd[0]);
  ASSERT_NE(d, nullptr);
  // A fresh stream socket is writable: the registration's first edge says so, and nobody waits.
  TaskList first = poller.poll(0);
  EXPECT_EQ(drain(first), 0u);
  EXPECT_TRUE(Poller::take_ready(*d, IoWait::writable));
  EXPECT_FALSE(Poller::take_ready(*d, IoWait::writable)) << "an edge is consumed once";

  Task task;
  ASSERT_TRUE(poller.park(*d, IoWait::readable, task));
  EXPECT_EQ(poller.waiters(), 1);
  TaskList nothing = poller.poll(0);
  EXPECT_EQ(drain(nothing), 0u) << "no data yet";
  pair.send_byte();
  TaskList ready = poller.poll(0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready.pop_front(), &task);
  EXPECT_EQ(poller.waiters(), 0);
  EXPECT_EQ(poller.readied(), 1u);
  TaskList again = poller.poll(0);
  EXPECT_EQ(drain(again), 0u) << "edge-triggered: the same data readies nobody twice";
  poller.close(*d);
}

TEST(Poller, AnEdgeBeforeTheParkIsKeptForIt) {
  Poller poller;
  Pair pair;
  PollDesc* d = poller.open(pair.fd[0]);
  ASSERT_NE(d, nullptr);
  pair.send_byte();
  TaskList seen = poller.poll(0);
  EXPECT_EQ(drain(seen), 0u) << "nobody waited";
  Task task;
  EXPECT_FALSE(poller.park(*d, IoWait::readable, task)) << "the kept edge is the park's: it must not sleep";
  EXPECT_EQ(poller.waiters(), 0);
  EXPECT_FALSE(Poller::take_ready(*d, IoWait::readable)) << "and it was consumed by that park";
  poller.close(*d);
}

TEST(Poller, AHangUpWakesBothDirections) {
  Poller poller;
  Pair pair;
  PollDesc* d = poller.open(pair.fd[0]);
  ASSERT_NE(d, nullptr);
  TaskList first = poller.poll(0);  // the initial writable edge
  EXPECT_EQ(drain(first), 0u);
  EXPECT_TRUE(Poller::take_ready(*d, IoWait::writable));
  Task reader;
  ASSERT_TRUE(poller.park(*d, IoWait::readable, reader));
  ::close(pair.fd[1]);
  pair.fd[1] = -1;
  TaskList ready = poller.poll(0);
  ASSERT_EQ(ready.size(), 1u) << "the peer's close is a readable edge (EPOLLRDHUP)";
  EXPECT_EQ(ready.pop_front(), &reader);
  poller.close(*d);
}

bool in_epoll_wait(pid_t tid) {
  const long call = blocked_in(tid);
  return call == SYS_epoll_wait || call == SYS_epoll_pwait;
}

TEST(Poller, WakeReturnsABlockingPollAndOnlyOnce) {
  Poller poller;
  std::atomic<pid_t> tid{0};
  std::atomic<int> returned{0};
  std::thread blocked([&] {
    tid.store(static_cast<pid_t>(::syscall(SYS_gettid)));
    TaskList none = poller.poll(-1);
    EXPECT_EQ(none.size(), 0u);
    returned.fetch_add(1);
  });
  while (tid.load() == 0 || !in_epoll_wait(tid.load())) std::this_thread::yield();
  poller.wake();
  poller.wake();  // a second wake before the first is read adds nothing
  blocked.join();
  EXPECT_EQ(returned.load(), 1);
  // The eventfd was read back by the blocking poll: a non-blocking poll now sees nothing, and the
  // next blocking poll would sleep (a wake() after the read is a new one).
  TaskList after = poller.poll(0);
  EXPECT_EQ(after.size(), 0u);
  EXPECT_GT(poller.blocked_ns(), 0u);
}

TEST(Poller, AWakeBeforeTheBlockingPollIsNotLost) {
  Poller poller;
  poller.wake();
  TaskList none = poller.poll(0);  // a non-blocking poll leaves it for the blocking one
  poller.wake();
  TaskList woken = poller.poll(-1);  // returns at once
  EXPECT_EQ(woken.size(), 0u);
  EXPECT_EQ(none.size(), 0u);
}

TEST(Poller, ARegularFileIsNotWatched) {
  Poller poller;
  char path[] = "/tmp/schedlab-poller-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  EXPECT_EQ(poller.open(fd), nullptr) << "epoll refuses regular files (always ready): the wait goes to the kernel";
  ::close(fd);
}

TEST(Poller, AClosedDescriptorsEventsAreDropped) {
  Poller poller;
  Pair a;
  PollDesc* d = poller.open(a.fd[0]);
  ASSERT_NE(d, nullptr);
  const std::uint32_t seq = d->seq.load();
  poller.close(*d);
  EXPECT_EQ(d->seq.load(), seq + 1) << "a closed descriptor's old events no longer match it";
  Pair b;
  PollDesc* again = poller.open(b.fd[0]);
  EXPECT_EQ(again, d) << "descriptors are recycled";
  EXPECT_EQ(again->rg.load(), nullptr);
  poller.close(*again);
}

}  // namespace
}  // namespace schedlab
