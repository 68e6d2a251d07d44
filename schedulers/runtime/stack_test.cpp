// StackAllocator: page-rounded sizes, a guard page that really faults, reuse of freed stacks,
// unguarded slabs once the process's guard-page budget is spent, and a refusal that names the
// fix.
#include "stack.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

namespace schedlab {
namespace {

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

char* bottom_of(const boost::context::stack_context& s) { return static_cast<char*>(s.sp) - s.size; }

TEST(StackAllocator, SizesAreRoundedUpToWholePages) {
  StackAllocator one_byte(StackConfig{1, false});
  EXPECT_EQ(one_byte.stack_size(), kPage);
  StackAllocator page_and_a_byte(StackConfig{kPage + 1, true});
  EXPECT_EQ(page_and_a_byte.stack_size(), 2 * kPage);
  boost::context::stack_context s = page_and_a_byte.allocate();
  EXPECT_EQ(s.size, 2 * kPage);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bottom_of(s)) % kPage, 0u);
  page_and_a_byte.deallocate(s);
}

TEST(StackAllocator, WholeUsableRangeIsWritable) {
  StackAllocator a(StackConfig{4 * kPage, true});
  boost::context::stack_context s = a.allocate();
  ASSERT_EQ(a.guarded(), 1u);
  std::memset(bottom_of(s), 0xAB, s.size);
  EXPECT_EQ(bottom_of(s)[0], static_cast<char>(0xAB));
  EXPECT_EQ(static_cast<char*>(s.sp)[-1], static_cast<char>(0xAB));
  a.deallocate(s);
}

TEST(StackAllocatorDeathTest, WriteJustBelowAGuardedStackFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  {
    StackAllocator probe(StackConfig{kPage, true});
    probe.allocate();
    if (probe.guarded() != 1) GTEST_SKIP() << "this process has no guard pages left to hand out";
  }
  EXPECT_DEATH(
      {
        StackAllocator a(StackConfig{kPage, true});
        boost::context::stack_context s = a.allocate();
        bottom_of(s)[0] = 1;  // the stack's lowest usable byte
        volatile char* below = bottom_of(s) - 1;
        *below = 1;  // the guard page: SIGSEGV (or the sanitizer's report of it)
      },
      "");
}

TEST(StackAllocator, FreedStacksAreReused) {
  StackAllocator a(StackConfig{kPage, true});
  boost::context::stack_context s1 = a.allocate();
  boost::context::stack_context s2 = a.allocate();
  const std::set<void*> first{s1.sp, s2.sp};
  a.deallocate(s1);
  a.deallocate(s2);
  const std::set<void*> again{a.allocate().sp, a.allocate().sp};
  EXPECT_EQ(again, first);
  EXPECT_EQ(a.guarded() + a.unguarded(), 2u) << "reuse maps nothing new";
}

// ASan builds name the stack a fiber runs on by any address in it (boost_fiber.cpp).
TEST(StackAllocator, StackHoldingNamesTheWholeStackAroundAnAddress) {
  for (bool guard : {true, false}) {
    StackAllocator a(StackConfig{2 * kPage, guard});
    for (int i = 0; i < 3; ++i) {  // unguarded, the three share one slab
      const boost::context::stack_context s = a.allocate();
      const char* top = static_cast<const char*>(s.sp);
      const StackRange expected{top - s.size, s.size};
      for (const char* p : {top - 1, top - s.size, top - s.size / 2}) {
        const StackRange got = a.stack_holding(p);
        EXPECT_EQ(got.low, expected.low) << "guard " << guard << ", stack " << i;
        EXPECT_EQ(got.size, expected.size);
        EXPECT_TRUE(got.contains(p));
      }
      EXPECT_NE(a.stack_holding(top).low, expected.low) << "the byte above a stack is not in it";
      if (a.unguarded() == 0) {  // its guard page belongs to no stack
        EXPECT_EQ(a.stack_holding(expected.low - 1).low, nullptr);
      }
    }
    const int local = 0;
    EXPECT_EQ(a.stack_holding(&local).low, nullptr) << "the thread's own stack is not the allocator's";
  }
}

TEST(StackRange, TheCurrentThreadsStackHoldsItsLocals) {
  const int local = 0;
  EXPECT_TRUE(current_thread_stack().contains(&local));
}

long max_map_count() {
  std::ifstream in("/proc/sys/vm/max_map_count");
  long v = 0;
  return in >> v ? v : 0;
}

TEST(StackAllocator, OnceTheGuardBudgetIsSpentStacksComeFromUnguardedSlabs) {
  // The budget is half of what vm.max_map_count leaves this process; spending it is quick at
  // the default 65530 (about 28k guarded stacks), not at the millions some systems allow.
  const long limit = max_map_count();
  if (limit <= 0 || limit > 300000) GTEST_SKIP() << "vm.max_map_count " << limit << " is too large to exhaust here";
  {
    StackAllocator a(StackConfig{kPage, true});
    boost::context::stack_context s{};
    for (long i = 0; i <= limit / 2 && a.unguarded() == 0; ++i) s = a.allocate();
    ASSERT_EQ(a.unguarded(), 1u) << "still guarded after " << a.guarded() << " stacks";
    const std::uint64_t guarded = a.guarded();
    EXPECT_GT(guarded, 0u);
    // The first slab: 64 stacks side by side, no guard page between them.
    char* const slab_sp = static_cast<char*>(s.sp);
    for (std::size_t i = 1; i < 64; ++i) {
      EXPECT_EQ(static_cast<char*>(a.allocate().sp), slab_sp + i * kPage) << "stack " << i << " of the slab";
    }
    a.allocate();  // the 65th: a second slab
    EXPECT_EQ(a.unguarded(), 65u);
    EXPECT_EQ(a.guarded(), guarded) << "no guard page once the budget is spent";
  }
  // The allocator gave its guard pages back when it was destroyed.
  StackAllocator b(StackConfig{kPage, true});
  b.allocate();
  EXPECT_EQ(b.guarded(), 1u);
  EXPECT_EQ(b.unguarded(), 0u);
}

TEST(StackAllocator, RefusalNamesTheSizeAndTheFix) {
  // Larger than the whole user address space: mmap refuses whatever the machine's memory.
  const std::size_t huge = std::size_t{1} << 47;
  for (const bool guard : {true, false}) {
    StackAllocator a(StackConfig{huge, guard});
    try {
      a.allocate();
      ADD_FAILURE() << "a " << huge << "-byte stack was mapped";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      const std::string mapped = guard ? "a fiber stack of " + std::to_string(huge + kPage)
                                       : "a slab of fiber stacks of " + std::to_string(huge * 64);
      EXPECT_NE(what.find("cannot map " + mapped + " bytes (" + std::strerror(ENOMEM) + ")"), std::string::npos) << what;
      EXPECT_NE(what.find("use a smaller --stack-size"), std::string::npos) << what;
    }
    EXPECT_EQ(a.guarded() + a.unguarded(), 0u);
  }
}

}  // namespace
}  // namespace schedlab
