// futex.hpp: sleeping on a word, for the runtime's own waits (its locks, its monitors' sleeps).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace schedlab {

// Sleeps while `word` holds `expected`, at most `timeout` (nullptr: no limit), as the kernel's
// timers allow. Returns on a wake, a timeout, a signal, or a word that already differs.
inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, const timespec* timeout = nullptr) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, timeout, nullptr, 0);
}
// Wakes up to `count` threads sleeping on `word`.
inline void futex_wake(std::atomic<std::uint32_t>& word, int count = INT_MAX) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

}  // namespace schedlab
