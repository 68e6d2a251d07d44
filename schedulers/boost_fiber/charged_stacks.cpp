// charged_stacks.cpp: see charged_stacks.hpp; what a refusal records and says.
#include "charged_stacks.hpp"

namespace schedlab::boost_fiber {

[[noreturn]] void ChargedStacks::refuse(std::string why) {
  held_.fetch_sub(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(refusal_mutex_);
    if (!refused_.load(std::memory_order_relaxed)) {
      refusal_ = why;
      refused_.store(true, std::memory_order_release);
    }
  }
  throw ResourceError(why);
}

std::string ChargedStacks::budget_report(std::uint64_t held) const {
  const MemoryBudget budget = memory_budget();
  auto mib = [](std::uint64_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; };
  return "memory budget of " + mib(budget.bytes) + " (" + budget.source + ") reached: " + std::to_string(held) +
         " live fibers (running, waiting, or finished with stacks Boost has not released yet) hold about " +
         mib(memory_charged() + held * kTaskRecordBytes) +
         "; use a smaller problem (--n, --leaves, --tree, or a serial --cutoff) or a larger --memory-budget";
}

}  // namespace schedlab::boost_fiber
