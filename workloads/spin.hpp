// spin.hpp: CPU work the compiler cannot fold away.
//
// The seeds' loops are `for i < M { x++ }`. Written plainly, g++ -O2 turns that into `x = M`
// and every scheduler "finishes" 2000 tasks in microseconds. The empty asm statement with x as
// an in/out register operand tells the compiler the value may change between iterations, so
// each increment is really executed (one add per iteration, nothing else: no memory traffic).
// The loops workload's closing-note check is that wall time grows linearly with M.
//
// Every kSafepointEvery increments the loop passes a safe point (schedulers/safepoint.hpp),
// where a task its scheduler's monitor has found running for 10 ms yields (--preempt
// safepoint): the model of Go's function-prologue check, which a Go loop of this shape meets at
// each call. One load and a branch per 1024 increments: nothing next to the increments.
#pragma once

#include <algorithm>
#include <cstdint>

#include "safepoint.hpp"

namespace schedlab {

// Increments between two safe points: ~0.3-1 µs of this loop, so a marked task yields within
// a microsecond of its mark, and the check costs one load and branch per 1024 increments.
inline constexpr std::uint64_t kSafepointEvery = 1024;

inline std::uint64_t count_up(std::uint64_t iterations) {
  std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iterations;) {
    const std::uint64_t end = std::min(iterations, i + kSafepointEvery);
    for (; i < end; ++i) {
      ++x;
      asm volatile("" : "+r"(x));
    }
    safepoint();
  }
  return x;
}

}  // namespace schedlab
