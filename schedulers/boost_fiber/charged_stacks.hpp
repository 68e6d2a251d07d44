// charged_stacks.hpp: the fibers' stacks for Boost.Fiber, the fiber runtime's StackAllocator
// with every stack it maps charged against the process's memory budget (memory_budget.hpp);
// boost_fiber.cpp says why (its "Stacks" and "Memory").
//
// Invariants: the stacks charged are the most Boost has held at once (the allocator unmaps
// nothing before it goes), and all are released when it goes; once a stack is refused (the
// budget, or the kernel), every later allocation is refused with the same message. Safe to call
// from any worker thread: a work-stealing fiber is freed by whichever thread releases it.
#pragma once

#include <unistd.h>

#include <boost/context/stack_context.hpp>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#include "../memory_budget.hpp"
#include "../runtime/stack.hpp"
#include "../scheduler.hpp"

namespace schedlab::boost_fiber {

// The fibers' stacks: the fiber runtime's StackAllocator, each stack it maps charged against the
// memory budget (see the top of boost_fiber.cpp). The allocator pools stacks and unmaps them only when
// it goes, so the stacks it has mapped are the most Boost ever held at once: a stack is charged
// when the count Boost holds passes its previous high, and everything is released at the end.
class ChargedStacks {
 public:
  explicit ChargedStacks(StackConfig config) : stacks_(config) {}
  ~ChargedStacks() { memory_release(charged_.load(std::memory_order_relaxed) * stack_charge()); }
  ChargedStacks(const ChargedStacks&) = delete;
  ChargedStacks& operator=(const ChargedStacks&) = delete;

  // Throws ResourceError past the budget, or when the kernel refuses the stack; once refused,
  // every later call is (the scheduler cannot run again).
  boost::context::stack_context allocate() {
    const std::uint64_t held = held_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (refused_.load(std::memory_order_acquire)) {
      held_.fetch_sub(1, std::memory_order_relaxed);
      throw ResourceError(refusal_);  // written once, before refused_
    }
    std::uint64_t high = high_.load(std::memory_order_relaxed);
    while (held > high) {
      if (!high_.compare_exchange_weak(high, held, std::memory_order_relaxed)) continue;
      const std::uint64_t fresh = held - high;  // stacks the pool must map now
      if (!memory_try_charge(fresh * stack_charge(), held * kTaskRecordBytes)) refuse(budget_report(held));
      charged_.fetch_add(fresh, std::memory_order_relaxed);
      break;
    }
    try {
      return stacks_.allocate();
    } catch (const std::exception& e) {  // its message names the limit and the fix
      refuse(std::string(e.what()) + " (" + std::to_string(held) + " fibers)");
    }
  }
  void deallocate(boost::context::stack_context& sctx) noexcept {
    stacks_.deallocate(sctx);
    held_.fetch_sub(1, std::memory_order_relaxed);
  }

  std::uint64_t mapped() const { return stacks_.guarded() + stacks_.unguarded(); }
  std::size_t stack_size() const noexcept { return stacks_.stack_size(); }
  StackRange stack_holding(const void* p) const noexcept { return stacks_.stack_holding(p); }

 private:
  // What a fiber is charged: the two pages its stack commits (the task record is charged as
  // transient, kTaskRecordBytes per fiber held).
  static std::uint64_t stack_charge() { return 2 * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)); }

  // Records the first refusal, for every later call, and throws it.
  [[noreturn]] void refuse(std::string why);

  // The refusal past the memory budget, `held` fibers holding stacks.
  std::string budget_report(std::uint64_t held) const;

  StackAllocator stacks_;
  std::atomic<std::uint64_t> held_{0};     // stacks Boost holds now
  std::atomic<std::uint64_t> high_{0};     // the most it has held: the stacks the pool mapped
  std::atomic<std::uint64_t> charged_{0};  // stacks charged to the budget
  std::atomic<bool> refused_{false};
  std::mutex refusal_mutex_;
  std::string refusal_;  // the first refusal's message, once refused_
};

// The small handle Boost keeps by value inside each fiber.
struct ChargedStacksRef {
  ChargedStacks* stacks;
  boost::context::stack_context allocate() { return stacks->allocate(); }
  void deallocate(boost::context::stack_context& sctx) noexcept { stacks->deallocate(sctx); }
};

}  // namespace schedlab::boost_fiber
