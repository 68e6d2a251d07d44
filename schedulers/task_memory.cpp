// task_memory.cpp: where task objects live.
//
// Every spawn allocates one task and every join frees it, millions of times a second, so the
// allocator is on the hot path of every scheduler alike. Measured with callgrind on fib-go
// (steal-half, one thread): oneTBB's scalable_malloc/free cost ~120 instructions per task,
// glibc's malloc spills out of its 7-entry tcache into the slower bins. A per-thread free list
// per 64-byte size class costs ~10, and that is what this file is.
//
// A block freed by another thread joins that thread's list (memory moves between threads with
// the tasks, as in tcache); each list keeps at most kKeep blocks and returns the rest to
// operator delete, so a burst does not pin memory. Sanitizer builds bypass the lists so that
// ASan still sees every use after free and TSan every allocation.
#include <cstddef>
#include <cstdint>
#include <new>

#include "scheduler.hpp"

namespace schedlab::detail {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kPooled = false;
#else
constexpr bool kPooled = true;
#endif

constexpr std::size_t kClassBytes = 64;
constexpr std::size_t kClasses = 8;  // blocks of 64 .. 512 bytes; larger tasks use operator new
constexpr std::size_t kKeep = 4096;  // blocks kept per class and thread

// Each block starts with a header recording its class, so free needs no size.
struct alignas(16) Header {
  std::uint32_t size_class;  // kClasses: not pooled
};
struct FreeBlock {
  FreeBlock* next;
};

// Constant-initialised and trivially destructible, so that reaching it is one %fs-relative
// access: a thread_local with a destructor is reached through a lazy-initialisation guard on
// every access (callgrind: ~10 instructions of each allocation and each free). The blocks a
// thread keeps are handed back when it exits by ReleaseAtExit, armed once per thread, the first
// time it keeps one (`armed`, not the list's count: a list's step from 0 to 1 block recurs each
// time a thread empties it and frees again). allocate/free are never inlined into their callers (this
// file has them), so a caller that switches fibers between the two reaches each thread's own
// cache.
struct ThreadCache {
  FreeBlock* head[kClasses];
  std::uint32_t count[kClasses];
  bool armed;
};
constinit thread_local ThreadCache tls_cache{};

struct ReleaseAtExit {
  ~ReleaseAtExit() {
    for (std::size_t c = 0; c < kClasses; ++c) {
      while (FreeBlock* b = tls_cache.head[c]) {
        tls_cache.head[c] = b->next;
        ::operator delete(reinterpret_cast<Header*>(b) - 1);
      }
      tls_cache.count[c] = 0;
    }
  }
};

// Naming the thread_local constructs it, which registers its destructor for this thread's exit.
[[gnu::noinline]] void arm_release_at_exit() {
  static thread_local ReleaseAtExit release;
  (void)&release;
}

}  // namespace

void* allocate_task_memory(std::size_t size) {
  const std::size_t c = (size + kClassBytes - 1) / kClassBytes - 1;
  if (kPooled && c < kClasses) {
    ThreadCache& tc = tls_cache;
    if (FreeBlock* b = tc.head[c]) {
      tc.head[c] = b->next;
      --tc.count[c];
      return b;
    }
    auto* h = static_cast<Header*>(::operator new(sizeof(Header) + (c + 1) * kClassBytes));
    h->size_class = static_cast<std::uint32_t>(c);
    return h + 1;
  }
  auto* h = static_cast<Header*>(::operator new(sizeof(Header) + size));
  h->size_class = kClasses;
  return h + 1;
}

void free_task_memory(void* p) noexcept {
  Header* h = static_cast<Header*>(p) - 1;
  const std::size_t c = h->size_class;
  if (kPooled && c < kClasses) {
    ThreadCache& tc = tls_cache;
    if (tc.count[c] < kKeep) {
      if (!tc.armed) [[unlikely]] {
        arm_release_at_exit();
        tc.armed = true;
      }
      auto* b = static_cast<FreeBlock*>(p);
      b->next = tc.head[c];
      tc.head[c] = b;
      ++tc.count[c];
      return;
    }
  }
  ::operator delete(h);
}

}  // namespace schedlab::detail
