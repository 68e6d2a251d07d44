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
    for (;;) {
      const std::uint32_t had = permit_.exchange(0, std::memory_order_acquire);
      SCHEDLAB_ASSERT(had <= 1, "a parker holds at most one permit");
      if (had != 0) return;
      permit_.wait(0, std::memory_order_relaxed);
    }
  }
  // By any thread. Makes a permit available (a second unpark before the park adds nothing) and
  // wakes the parked thread, if any.
  void unpark() noexcept {
    const std::uint32_t had = permit_.exchange(1, std::memory_order_release);
    SCHEDLAB_ASSERT(had <= 1, "a parker holds at most one permit");
    if (had == 0) permit_.notify_one();
  }

 private:
  std::atomic<std::uint32_t> permit_{0};  // 0 or 1
};

}  // namespace schedlab
