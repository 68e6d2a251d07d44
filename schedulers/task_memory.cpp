// task_memory.cpp: where task objects live.
//
// Every spawn allocates one task and every join frees it, millions of times a second, so the
// allocator is on the hot path of every scheduler alike. Measured with callgrind on fib-go
// (steal-half, one thread): oneTBB's scalable_malloc/free cost ~120 instructions per task,
// glibc's malloc spills out of its 7-entry tcache into the slower bins. A per-thread free list
// per 64-byte size class costs a few, and that is what this file is: the caller passes the
// class (a compile-time constant of the task type, scheduler.hpp), so a block needs no header
// and a pop or push is four instructions behind one thread_local access.
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
namespace {

constexpr std::uint32_t kKeep = 4096;  // blocks kept per class and thread

struct FreeBlock {
  FreeBlock* next;
};

std::size_t block_bytes(std::uint32_t size_class) { return (size_class + 1) * kTaskBlockBytes; }

// Constant-initialised and trivially destructible, so that reaching it is one %fs-relative
// access: a thread_local with a destructor is reached through a lazy-initialisation guard on
// every access (callgrind: ~10 instructions of each allocation and each free). `room` is how
// many more blocks the list of a class may keep; it is 0 in a thread that has never freed a
// block, so that thread's first free takes the slow path, which arms ReleaseAtExit (the blocks
// a thread keeps are handed back when it exits) and opens the room: the fast path of a free is
// then one test, whether the list is full or the thread new.
struct ThreadCache {
  FreeBlock* head[kTaskBlockClasses];
  std::uint32_t room[kTaskBlockClasses];
  bool armed;
};
constinit thread_local ThreadCache tls_cache{};

struct ReleaseAtExit {
  ~ReleaseAtExit() {
    for (std::uint32_t c = 0; c < kTaskBlockClasses; ++c) {
      while (FreeBlock* b = tls_cache.head[c]) {
        tls_cache.head[c] = b->next;
        ::operator delete(b);
      }
      tls_cache.room[c] = 0;
    }
  }
};

// Naming the thread_local constructs it, which registers its destructor for this thread's exit.
[[gnu::noinline]] void arm_release_at_exit() {
  static thread_local ReleaseAtExit release;
  (void)&release;
}

// A free that found no room: the thread's first (arm the cache), or a full list.
[[gnu::noinline]] void free_without_room(FreeBlock* b, std::uint32_t c) noexcept {
  ThreadCache& tc = tls_cache;
  if (!tc.armed) {
    arm_release_at_exit();
    tc.armed = true;
    for (std::uint32_t k = 0; k < kTaskBlockClasses; ++k) tc.room[k] = kKeep;
    b->next = tc.head[c];
    tc.head[c] = b;
    --tc.room[c];
    return;
  }
  ::operator delete(b);
}

}  // namespace

void* allocate_task_block(std::uint32_t c) {
  ThreadCache& tc = tls_cache;
  if (FreeBlock* b = tc.head[c]) [[likely]] {
    tc.head[c] = b->next;
    ++tc.room[c];
    return b;
  }
  return ::operator new(block_bytes(c));
}

void free_task_block(void* p, std::uint32_t c) noexcept {
  auto* b = static_cast<FreeBlock*>(p);
  ThreadCache& tc = tls_cache;
  if (tc.room[c] != 0) [[likely]] {
    b->next = tc.head[c];
    tc.head[c] = b;
    --tc.room[c];
    return;
  }
  free_without_room(b, c);
}

}  // namespace schedlab::detail
