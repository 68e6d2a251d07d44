// steal-half and the network poller: the M with nothing to do blocks in epoll instead of
// parking, a new task wakes it there (no lost wake-up, no new thread), and tasks waiting on
// sockets hold no thread.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api.hpp"
#include "steal_half.hpp"
#include "runtime/test_util.hpp"

namespace schedlab {
namespace {

using Clock = std::chrono::steady_clock;

using test_util::blocked_in;
using Pair = test_util::SocketPair;

// A worker of s is asleep in epoll_wait: the M blocked in the poller.
bool some_worker_in_epoll(const Scheduler& s) {
  for (pid_t tid : s.worker_tids()) {
    const long call = blocked_in(tid);
    if (call == SYS_epoll_wait || call == SYS_epoll_pwait) return true;
  }
  return false;
}

const Poller* poller_of(const Scheduler& s) { return dynamic_cast<const FiberRuntime&>(s).poller(); }

// Spins (never yields the worker: no task switch) until `done`, at most 10 s.
bool spin_until(const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (Clock::now() > deadline) return false;
  }
  return true;
}

// Runs `readers` tasks that each wait for one byte on a socket of their own and, spawned before
// them (so that under the owner's LIFO order at one P it runs after them; at two it may be
// stolen early and waits for them on the other P), a writer that waits until `all_waiting()`
// and then sends each reader its byte. Returns how many readers got theirs; *waited: whether
// all_waiting() came true before the deadline.
int readers_and_writer(Scheduler& s, int readers, const std::function<bool()>& all_waiting, bool* waited) {
  std::vector<Pair> pairs(static_cast<std::size_t>(readers));
  std::atomic<int> done{0};
  s.run([&] {
    WaitGroup wg;
    wg.go([&] {
      *waited = spin_until(all_waiting);
      for (Pair& p : pairs) EXPECT_EQ(::write(p.fd[1], "y", 1), 1);
    });
    for (Pair& p : pairs) {
      wg.go([&done, &p] {
        Socket in = p.take_reader();
        char ch;
        if (Tasks::read_full(in, &ch, 1).bytes == 1) done.fetch_add(1);
      });
    }
    wg.wait();
  });
  return done.load();
}

std::unique_ptr<Scheduler> two_ps() {
  RuntimeConfig rc;
  rc.threads = 2;
  StealHalfConfig c;
  c.max_threads = 16;
  return make_steal_half(rc, c);
}

// Two Ps. A reader parks on a socket; its M finds nothing else and blocks in the poller (the
// only M with nothing to do). The other M runs a task that never yields and spawns two more:
// the second's push wakes an M for the idle P, and the only idle M is the one in epoll_wait.
// If that wake-up were lost, the spawned tasks would sit in a queue while their spawner spins
// (it never gives its P up): the spinner's deadline fails the test instead of a hang.
TEST(StealHalfNetpoll, ATaskSpawnedWhileTheIdleMIsInThePollerIsRun) {
  auto s = two_ps();
  for (int rep = 0; rep < 5; ++rep) {
    SCOPED_TRACE("rep " + std::to_string(rep));
    Pair pair;
    std::atomic<bool> in_poller{false}, ran{false};
    IoResult got;
    s->run([&] {
      WaitGroup wg;
      wg.go([&] {
        Socket in = pair.take_reader();
        char c;
        got = Tasks::read_full(in, &c, 1);
      });
      wg.go([&] {
        in_poller = spin_until([&] {
          const Poller* p = poller_of(*s);
          return p != nullptr && p->waiters() == 1 && some_worker_in_epoll(*s);
        });
        WaitGroup spawned;
        spawned.go([&] { ran = true; });
        spawned.go([&] { ran = true; });  // displaces the first into the queue: a wake-up
        EXPECT_TRUE(spin_until([&] { return ran.load(); })) << "a task spawned while the idle M was in the poller never ran";
        EXPECT_EQ(::write(pair.fd[1], "x", 1), 1);
        spawned.wait();
      });
      wg.wait();
    });
    EXPECT_TRUE(in_poller.load()) << "no M blocked in the poller while the reader waited";
    EXPECT_EQ(got.bytes, 1u);
  }
  // The M in the poller took the idle P: no thread was started for it.
  EXPECT_EQ(s->counters()[Counter::threads_created], 2u);
}

// Many tasks wait on sockets at once; at one P no thread is added (the M in the poller is the
// only one), at two at most one beyond the Ps.
TEST(StealHalfNetpoll, WaitingTasksHoldNoThread) {
  for (unsigned ps : {1u, 2u}) {
    SCOPED_TRACE(std::to_string(ps) + " Ps");
    RuntimeConfig rc;
    rc.threads = ps;
    StealHalfConfig c;
    c.max_threads = 64;
    auto s = make_steal_half(rc, c);
    constexpr int kReaders = 40;
    bool all_parked = false;
    const int done = readers_and_writer(*s, kReaders, [&] {
      return poller_of(*s) != nullptr && poller_of(*s)->waiters() == kReaders;
    }, &all_parked);
    EXPECT_TRUE(all_parked);
    EXPECT_EQ(done, kReaders);
    const CounterSet k = s->counters();
    EXPECT_LE(k[Counter::threads_created], ps + 1) << "a waiting task must not hold a thread";
    EXPECT_EQ(k[Counter::handoffs], 0u);
  }
}

// --netpoll off: the same waits go through blocking() and the hand-off, so every reader that
// waits holds a thread while its P moves on.
TEST(StealHalfNetpoll, NetpollOffHandsThePOn) {
  RuntimeConfig rc;
  rc.threads = 1;
  rc.netpoll = false;
  StealHalfConfig c;
  c.max_threads = 64;
  auto s = make_steal_half(rc, c);
  constexpr int kReaders = 8;
  bool all_in_poll = false;
  // Every reader is in poll(2) before the first byte: each holds a thread of its own.
  const int done = readers_and_writer(*s, kReaders, [&] {
    int waiting = 0;
    for (pid_t tid : s->worker_tids()) waiting += blocked_in(tid) == SYS_poll ? 1 : 0;
    return waiting == kReaders;
  }, &all_in_poll);
  EXPECT_TRUE(all_in_poll);
  EXPECT_EQ(done, kReaders);
  const CounterSet k = s->counters();
  EXPECT_GE(k[Counter::threads_created], 1u + kReaders);
  EXPECT_EQ(k[Counter::netpoll_readied], 0u);
  EXPECT_EQ(poller_of(*s), nullptr) << "no poller is made when it is off";
}

// One P kept busy by a stream of short tasks (every wait of the root finds its batch queued, so
// the M never runs out of local work and never polls itself), while a reader's byte arrives:
// only the system monitor's poll ("nobody has polled for 10 ms") sees the socket, queues the
// reader globally, and the P's 1-in-61 look at the global queue runs it. Without that poll the
// reader would wait for the stream to end (5 s), and the test fails naming the monitor. The
// local order is FIFO so that the reader, queued before the first batch, parks on its socket
// first (under LIFO each new batch would run before it).
TEST(StealHalfNetpoll, TheMonitorPollsWhileEveryPRunsOtherTasks) {
  RuntimeConfig rc;
  rc.threads = 1;
  StealHalfConfig c;
  c.handoff = HandOff::off;  // the monitor runs for the network alone
  c.order = LocalOrder::fifo;
  auto s = make_steal_half(rc, c);
  Pair pair;
  std::atomic<bool> read{false};
  bool read_during_stream = false, written = false;
  s->run([&] {
    WaitGroup wg;
    wg.go([&] {
      Socket in = pair.take_reader();
      char ch;
      if (Tasks::read_full(in, &ch, 1).bytes == 1) read = true;
    });
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!read.load() && Clock::now() < deadline) {
      WaitGroup batch;
      for (int i = 0; i < 100; ++i) batch.go([] {
          for (int k = 0; k < 1000; ++k) asm volatile("" ::: "memory");  // work the compiler keeps
        });
      batch.wait();
      // Once the reader parked (the stream's first batches ran first under LIFO), send its byte.
      const Poller* poller = poller_of(*s);
      if (!written && poller != nullptr && poller->waiters() == 1) {
        pair.send_byte();
        written = true;
      }
    }
    read_during_stream = read.load();
    if (!written) pair.send_byte();  // the reader never parked: let it finish, the check below fails
    wg.wait();
  });
  EXPECT_TRUE(written) << "the reader never parked on its socket during the stream";
  EXPECT_TRUE(read_during_stream) << "the reader ran only after the stream of tasks ended: the system monitor did "
                                     "not poll the network while the P was busy";
  const CounterSet k = s->counters();
  EXPECT_GE(k[Counter::sysmon_wakeups], 1u);
  EXPECT_EQ(k[Counter::threads_created], 1u) << "the monitor is no worker";
}

}  // namespace
}  // namespace schedlab
