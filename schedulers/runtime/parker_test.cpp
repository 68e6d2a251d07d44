// Parker: the single permit every worker sleeps on. A wake-up that comes before the sleep is
// kept, a sleeping thread is woken, and wake-ups do not pile up into several sleeps' worth.
//
// "Asleep" is read from the kernel, not guessed from elapsed time: a thread blocked in park() is
// inside futex(2), which /proc/self/task/TID/syscall names while it waits.
#include "parker.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "test_util.hpp"

namespace schedlab {
namespace {

using test_util::blocked_in;

// Waits until thread `tid` sleeps in futex(2) (true), or `woke` is set first (false).
bool sleeps_before(pid_t tid, const std::atomic<bool>& woke) {
  for (;;) {
    if (woke.load()) return false;
    if (blocked_in(tid) == SYS_futex) return true;
    std::this_thread::yield();
  }
}

pid_t this_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

TEST(Parker, PermitGivenBeforeParkIsNotLost) {
  Parker p;
  std::thread waker([&] { p.unpark(); });
  waker.join();
  p.park();  // returns at once: the permit was waiting
  SUCCEED();
}

TEST(Parker, UnparkWakesAParkedThread) {
  Parker p;
  std::atomic<pid_t> tid{0};
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    tid.store(this_tid());
    p.park();
    woke.store(true);
  });
  while (tid.load() == 0) std::this_thread::yield();
  EXPECT_TRUE(sleeps_before(tid.load(), woke)) << "park() returned without a permit";
  p.unpark();
  sleeper.join();
  EXPECT_TRUE(woke.load());
}

TEST(Parker, PermitsDoNotAccumulate) {
  Parker p;
  p.unpark();
  p.unpark();  // still one permit
  std::atomic<pid_t> tid{0};
  std::atomic<bool> first_park_returned{false};
  std::atomic<bool> second_park_returned{false};
  std::thread sleeper([&] {
    tid.store(this_tid());
    p.park();  // takes the permit
    first_park_returned.store(true);
    p.park();  // nothing left: sleeps
    second_park_returned.store(true);
  });
  while (!first_park_returned.load()) std::this_thread::yield();
  EXPECT_TRUE(sleeps_before(tid.load(), second_park_returned))
      << "two unparks let two parks through";
  p.unpark();
  sleeper.join();
  EXPECT_TRUE(second_park_returned.load());
}

// The deadlock check tells a woken owner from a sleeping one by the permit: it shows from the
// unpark until the owner takes it, and wait() leaves it for take() (Worker::park marks itself
// awake in between). An unpark in between adds nothing: take() consumes both.
TEST(Parker, NotifiedFromTheUnparkUntilTheOwnerTakesThePermit) {
  Parker p;
  EXPECT_FALSE(p.notified());
  p.unpark();
  EXPECT_TRUE(p.notified());
  p.wait();  // returns at once and leaves the permit
  EXPECT_TRUE(p.notified());
  p.unpark();
  p.take();
  EXPECT_FALSE(p.notified());
}

}  // namespace
}  // namespace schedlab
