// stack.hpp: where fiber stacks come from.
//
// Stacks are mmap'ed, never malloc'ed: pages are committed only when touched, so a 64 KiB stack
// that a task uses 2 KiB of costs one or two pages of memory. Each stack normally sits above a
// PROT_NONE guard page, so an overflow faults (and is reported, see fiber_guard) instead of
// silently writing over the neighbouring stack.
//
// Guard pages have a price the kernel enforces: a guarded stack is two memory mappings, and a
// process may hold vm.max_map_count of them (65530 by default). Fork-join under a FIFO queue
// keeps hundreds of thousands of suspended tasks alive (fib(30) under `central`: ~440k), each
// holding a stack. So guard pages are handed out from a process-wide budget derived from
// max_map_count; once it is spent, further stacks are carved unguarded from large slabs (one
// mapping per 64 stacks) and counted, so a run can say how many of its stacks were unguarded.
//
// Stacks are recycled through the fiber pool (a fiber keeps its stack), so allocate() runs only
// when a worker's pool is empty; the allocator keeps freed stacks and unmaps everything when the
// runtime that owns it is destroyed.
//
// Under Valgrind (`--counters sim`) every stack is registered with it (VALGRIND_STACK_REGISTER)
// when it is mapped and deregistered before it is unmapped, so that Valgrind knows a switch
// between two fibers is a stack switch and not a huge frame (docs/platform.md). Natively the
// check is one client request per new stack and nothing is registered.
#pragma once

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "../task.hpp"

namespace schedlab {

// A stack's usable bytes: [low, low + size).
struct StackRange {
  const char* low = nullptr;
  std::size_t size = 0;
  bool contains(const void* p) const noexcept {
    const char* c = static_cast<const char*>(p);
    return low != nullptr && c >= low && c < low + size;
  }
};

// The calling thread's own stack (pthread_getattr_np), or an empty range if it cannot be read.
StackRange current_thread_stack() noexcept;

struct StackConfig {
  std::size_t size = kDefaultTaskStackBytes;  // usable bytes per stack (rounded up to whole pages)
  bool guard = true;             // a PROT_NONE page below each stack, while the budget lasts
};

class StackAllocator {
 public:
  explicit StackAllocator(StackConfig config);
  ~StackAllocator();
  StackAllocator(const StackAllocator&) = delete;
  StackAllocator& operator=(const StackAllocator&) = delete;

  // A stack of stack_size() usable bytes. Thread-safe. Throws std::runtime_error naming the
  // limit and the fix when the kernel refuses the memory.
  boost::context::stack_context allocate();
  // Returns a stack for reuse. Thread-safe.
  void deallocate(boost::context::stack_context& sctx) noexcept;

  std::size_t stack_size() const noexcept { return size_; }
  // The stack of this allocator that holds address `p`, or an empty range when none does.
  // Thread-safe; a scan of the mappings (ASan builds use it to name the stack a fiber is on).
  StackRange stack_holding(const void* p) const noexcept;
  std::uint64_t guarded() const;
  std::uint64_t unguarded() const;

 private:
  boost::context::stack_context allocate_guarded();
  boost::context::stack_context allocate_from_slab();
  // Registers a new stack with Valgrind when running under it; a no-op otherwise.
  void register_with_valgrind(const boost::context::stack_context& s);

  const std::size_t size_;
  const std::size_t page_;
  const bool guard_;
  mutable std::mutex mutex_;
  std::vector<boost::context::stack_context> free_;
  std::vector<std::pair<void*, std::size_t>> mappings_;  // everything to unmap at the end
  std::vector<bool> mapping_guarded_;
  std::vector<unsigned> valgrind_stack_ids_;  // registered stacks, when running under Valgrind
  char* slab_next_ = nullptr;  // the unused part of the newest slab
  std::size_t slab_left_ = 0;  // stacks left in it
  std::uint64_t guarded_ = 0;
  std::uint64_t unguarded_ = 0;
};

// Boost.Context keeps its stack allocator by value inside each fiber; this is the small handle
// it keeps.
struct StackAllocatorRef {
  StackAllocator* allocator;
  boost::context::stack_context allocate() { return allocator->allocate(); }
  void deallocate(boost::context::stack_context& sctx) noexcept { allocator->deallocate(sctx); }
};

}  // namespace schedlab
