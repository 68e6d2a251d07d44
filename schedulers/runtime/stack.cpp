#include "stack.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "../assert.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif
#if SCHEDLAB_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#endif

namespace schedlab {
namespace {

// Stacks per unguarded slab: one mapping serves 64 stacks (4 MiB at the default size).
constexpr std::size_t kSlabStacks = 64;
// Mappings left for everything else in the process (malloc arenas, libraries, thread stacks).
constexpr long kMapReserve = 8192;

long read_long(const char* path, long fallback) {
  std::ifstream in(path);
  long v = fallback;
  if (!(in >> v)) return fallback;
  return v;
}

long count_mappings() {
  std::ifstream in("/proc/self/maps");
  long n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

// Guarded stacks still allowed in this process (each costs two mappings). Computed once, from the
// kernel's limit and what the process already maps; stacks give their share back when unmapped.
std::atomic<long>& guard_budget() {
  static std::atomic<long> budget{[] {
    const long limit = read_long("/proc/sys/vm/max_map_count", 65530);
    const long left = (limit - count_mappings() - kMapReserve) / 2;
    return left > 0 ? left : 0L;
  }()};
  return budget;
}

[[noreturn]] void refuse(const char* what, std::size_t bytes) {
  throw std::runtime_error(std::string("cannot map ") + what + " of " + std::to_string(bytes) +
                           " bytes (" + std::strerror(errno) +
                           "): too many live tasks for this memory; use a smaller --stack-size, "
                           "a serial --cutoff, or a LIFO scheduler");
}

// Makes room for n elements in v, growing geometrically, so that the push_backs up to n cannot
// throw.
template <class Vector>
void reserve_at_least(Vector& v, std::size_t n) {
  if (v.capacity() < n) v.reserve(std::max(n, 2 * v.capacity()));
}

}  // namespace

StackAllocator::StackAllocator(StackConfig config)
    : size_([&] {
        const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        return (config.size + page - 1) / page * page;
      }()),
      page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))),
      guard_(config.guard) {}

StackAllocator::~StackAllocator() {
#if SCHEDLAB_HAVE_VALGRIND
  for (unsigned id : valgrind_stack_ids_) VALGRIND_STACK_DEREGISTER(id);
#endif
  long returned = 0;
  for (std::size_t i = 0; i < mappings_.size(); ++i) {
#if defined(__SANITIZE_ADDRESS__)
    // ASan's shadow still marks the stack frames that last lived here as stack; whoever maps
    // this range next (tbbmalloc did) would be reported for writing into a stack redzone.
    ASAN_UNPOISON_MEMORY_REGION(mappings_[i].first, mappings_[i].second);
#endif
    ::munmap(mappings_[i].first, mappings_[i].second);
    if (mapping_guarded_[i]) ++returned;
  }
  guard_budget().fetch_add(returned, std::memory_order_relaxed);
}

boost::context::stack_context StackAllocator::allocate() {
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    auto s = free_.back();
    free_.pop_back();
#if defined(__SANITIZE_ADDRESS__)
    // A fiber whose switches ASan was not told about (Boost.Fiber's, inside libboost_fiber)
    // leaves its frames' scope poison behind when it ends; the next user of the stack would be
    // reported for writing where a dead frame's local lived.
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(s.sp) - s.size, s.size);
#endif
    return s;
  }
  // deallocate() runs inside a fiber's exit (Fiber::release_stack, or Boost.Fiber's), where a
  // bad_alloc could only terminate the process: the room for every stack made so far, and this one, to come back is made here,
  // where the failure reaches the caller. So is the room to record the mapping.
  reserve_at_least(free_, guarded_ + unguarded_ + 1);
  reserve_at_least(mappings_, mappings_.size() + 1);
  reserve_at_least(mapping_guarded_, mapping_guarded_.size() + 1);
  if (guard_ && guard_budget().fetch_sub(1, std::memory_order_relaxed) > 0) {
    return allocate_guarded();
  }
  if (guard_) guard_budget().fetch_add(1, std::memory_order_relaxed);  // none was left
  return allocate_from_slab();
}

boost::context::stack_context StackAllocator::allocate_guarded() {
  const std::size_t bytes = size_ + page_;
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    guard_budget().fetch_add(1, std::memory_order_relaxed);
    refuse("a fiber stack", bytes);
  }
  if (::mprotect(base, page_, PROT_NONE) != 0) {
    ::munmap(base, bytes);
    guard_budget().fetch_add(1, std::memory_order_relaxed);
    refuse("a stack guard page", page_);
  }
  mappings_.emplace_back(base, bytes);
  mapping_guarded_.push_back(true);
  ++guarded_;
  boost::context::stack_context s;
  s.size = size_;
  s.sp = static_cast<char*>(base) + bytes;  // stacks grow down from the top
  register_with_valgrind(s);
  return s;
}

boost::context::stack_context StackAllocator::allocate_from_slab() {
  if (slab_left_ == 0) {
    const std::size_t bytes = size_ * kSlabStacks;
    void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) refuse("a slab of fiber stacks", bytes);
    // A transparent huge page would commit 2 MiB where a stack touches one 4 KiB page.
    ::madvise(base, bytes, MADV_NOHUGEPAGE);
    mappings_.emplace_back(base, bytes);
    mapping_guarded_.push_back(false);
    slab_next_ = static_cast<char*>(base);
    slab_left_ = kSlabStacks;
  }
  boost::context::stack_context s;
  s.size = size_;
  s.sp = slab_next_ + size_;
  slab_next_ += size_;
  --slab_left_;
  ++unguarded_;
  register_with_valgrind(s);
  return s;
}

void StackAllocator::register_with_valgrind([[maybe_unused]] const boost::context::stack_context& s) {
#if SCHEDLAB_HAVE_VALGRIND
  if (RUNNING_ON_VALGRIND == 0) return;
  // Valgrind takes the lowest and the highest addressable byte.
  char* top = static_cast<char*>(s.sp);
  valgrind_stack_ids_.push_back(VALGRIND_STACK_REGISTER(top - s.size, top - 1));
#endif
}

StackRange StackAllocator::stack_holding(const void* p) const noexcept {
  const char* c = static_cast<const char*>(p);
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < mappings_.size(); ++i) {
    const char* base = static_cast<const char*>(mappings_[i].first);
    if (c < base || c >= base + mappings_[i].second) continue;
    // A guarded stack is its own mapping above its guard page; a slab is kSlabStacks stacks.
    if (mapping_guarded_[i]) {
      if (c < base + page_) return {};  // the guard page is no stack's
      return {base + page_, size_};
    }
    return {base + static_cast<std::size_t>(c - base) / size_ * size_, size_};
  }
  return {};
}

StackRange current_thread_stack() noexcept {
  StackRange range;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return range;
  void* addr = nullptr;
  std::size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0) range = {static_cast<const char*>(addr), size};
  pthread_attr_destroy(&attr);
  return range;
}

void StackAllocator::deallocate(boost::context::stack_context& sctx) noexcept {
  SCHEDLAB_ASSERT(sctx.size == size_, "a stack goes back to the allocator that made it");
  std::lock_guard lock(mutex_);
  SCHEDLAB_ASSERT(free_.size() < free_.capacity(), "allocate() made room for every stack to come back");
  free_.push_back(sctx);
}

std::uint64_t StackAllocator::guarded() const {
  std::lock_guard lock(mutex_);
  return guarded_;
}

std::uint64_t StackAllocator::unguarded() const {
  std::lock_guard lock(mutex_);
  return unguarded_;
}

}  // namespace schedlab
