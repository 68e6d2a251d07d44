// parker.hpp: put one worker thread to sleep and wake it, without losing a wake-up.
//
// A single permit, as in Go's note or Rust's thread::park: unpark() leaves a permit, park()
// consumes it or sleeps until there is one. An unpark that arrives before the park is therefore
// never lost, which is what every scheduler's "check for work, then sleep" needs. The sleep is
// C++20's atomic wait, which libstdc++ implements with a futex on Linux.
#pragma once

#include <atomic>
#include <cstdint>

#include "../assert.hpp"

namespace schedlab {

class Parker {
 public:
  // Executed only by the thread this parker belongs to. Sleeps until a permit is available,
  // then consumes it.
  void park() noexcept {
    wait();
    take();
  }
  // park() in two halves, for an owner that must mark itself awake in between (Worker::park):
  // notified() stays true until take(), so from the unpark on an observer sees the owner as
  // woken, then as awake, and never again as asleep. wait() sleeps until a permit is available
  // and leaves it there; take() consumes it, along with any unpark that came in the meantime.
  void wait() noexcept {
    while (permit_.load(std::memory_order_acquire) == 0) permit_.wait(0, std::memory_order_relaxed);
  }
  void take() noexcept {
    const std::uint32_t had = permit_.exchange(0, std::memory_order_seq_cst);
    SCHEDLAB_ASSERT(had == 1, "a parker's permit is taken once, after wait() saw it");
  }
  // By any thread. Makes a permit available (a second unpark before the park adds nothing) and
  // wakes the parked thread, if any.
  void unpark() noexcept {
    const std::uint32_t had = permit_.exchange(1, std::memory_order_release);
    SCHEDLAB_ASSERT(had <= 1, "a parker holds at most one permit");
    if (had == 0) permit_.notify_one();
  }
  // By any thread, racily: a permit waits for the owner to take it (it was woken, and may still
  // be waiting for a CPU). The deadlock check's way of telling woken from asleep.
  bool notified() const noexcept { return permit_.load(std::memory_order_seq_cst) != 0; }

 private:
  std::atomic<std::uint32_t> permit_{0};  // 0 or 1
};

}  // namespace schedlab
