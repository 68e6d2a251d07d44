// cpu_relax.hpp: what a spin-wait does between two looks at the word it waits on.
#pragma once

#include <atomic>

namespace schedlab {

// x86's PAUSE: it tells the core that this is a spin loop, so that a sibling hyperthread gets
// the pipeline meanwhile and leaving the loop when the awaited store arrives does not cost a
// flush of mis-speculated loads. Elsewhere only a compiler barrier, so that the loop is not
// folded away.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace schedlab
