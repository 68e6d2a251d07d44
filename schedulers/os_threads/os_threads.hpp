// os-threads: every task is its own OS thread (see os_threads.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "../scheduler.hpp"

namespace schedlab {

struct OsThreadsConfig {
  // --threads. Not a limit on parallelism: every task is a thread and the kernel schedules them
  // all. With `affinity` every task thread is pinned to the first `threads` CPUs the process may
  // use, so threads=1 means one core, as it does for the other schedulers.
  unsigned threads = 1;
  std::size_t stack_size = kDefaultTaskStackBytes;  // pthread stack per task thread
  bool stack_guard = true;             // glibc's PROT_NONE guard page below each stack
  // Threads started and not yet joined (the root included) before spawn() refuses with a
  // std::runtime_error. See os_threads.cpp for the choice of the default.
  std::uint64_t max_live_threads = 10000;
  bool affinity = true;  // pin task threads to the first `threads` allowed CPUs
};

std::unique_ptr<Scheduler> make_os_threads(const OsThreadsConfig& config);

}  // namespace schedlab
