// task_memory.cpp: where task objects live.
//
// Every spawn allocates one task and every join frees it, millions of times a second, so the
// allocator is on the hot path of every scheduler alike. Measured with callgrind on fib-go
// (steal-half, one thread): oneTBB's scalable_malloc/free cost ~120 instructions per task,
// glibc's malloc spills out of its 7-entry tcache into the slower bins. A per-thread free list
// per 64-byte size class costs a few, and that is what this file is: the caller passes the
// class (a compile-time constant of the task type, scheduler.hpp), so a block needs no header;
// an allocation is a call and a pop, a free an inline push (scheduler.hpp, free_task_memory).
//
// A block freed by another thread joins that thread's list (memory moves between threads with
// the tasks, as in tcache); each list keeps at most kKeep blocks and returns the rest to
// operator delete, so a burst does not pin memory. Sanitizer builds never come here
// (scheduler.hpp, kPooledTaskMemory).
#include <cstddef>
#include <cstdint>
#include <new>

#include "scheduler.hpp"

namespace schedlab::detail {

// Constant-initialised and trivially destructible, so that reaching it is one %fs-relative
// access: a thread_local with a destructor is reached through a lazy-initialisation guard on
// every access (callgrind: ~10 instructions of each allocation and each free). The blocks a
// thread keeps are handed back when it exits by ReleaseAtExit, armed by the thread's first free.
constinit thread_local TaskBlockCache tls_task_blocks{};

namespace {

constexpr std::uint32_t kKeep = 4096;  // blocks kept per class and thread

std::size_t block_bytes(std::uint32_t size_class) { return (size_class + 1) * kTaskBlockBytes; }

struct ReleaseAtExit {
  ~ReleaseAtExit() {
    TaskBlockCache& cache = tls_task_blocks;
    for (std::uint32_t c = 0; c < kTaskBlockClasses; ++c) {
      while (void* b = cache.head[c]) {
        cache.head[c] = *static_cast<void**>(b);
        ::operator delete(b);
      }
      cache.room[c] = 0;  // frees from here on (later thread_local destructors) go to operator delete
    }
  }
};

// Naming the thread_local constructs it, which registers its destructor for this thread's exit.
[[gnu::noinline]] void arm_release_at_exit() {
  static thread_local ReleaseAtExit release;
  (void)&release;
}

}  // namespace

void* allocate_task_block(std::uint32_t c) {
  TaskBlockCache& cache = tls_task_blocks;
  if (void* b = cache.head[c]) [[likely]] {
    cache.head[c] = *static_cast<void**>(b);
    ++cache.room[c];
    return b;
  }
  return ::operator new(block_bytes(c));
}

void free_task_block(void* p, std::uint32_t c) noexcept {
  TaskBlockCache& cache = tls_task_blocks;
  if (cache.room[c] == 0 && !cache.armed) {
    arm_release_at_exit();
    cache.armed = true;
    for (std::uint32_t k = 0; k < kTaskBlockClasses; ++k) cache.room[k] = kKeep;
  }
  if (cache.room[c] != 0) {
    *static_cast<void**>(p) = cache.head[c];
    cache.head[c] = p;
    --cache.room[c];
    return;
  }
  ::operator delete(p);
}

}  // namespace schedlab::detail
