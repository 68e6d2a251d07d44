// spin.hpp: CPU work the compiler cannot fold away.
//
// The seeds' loops are `for i < M { x++ }`. Written plainly, g++ -O2 turns that into `x = M`
// and every scheduler "finishes" 2000 tasks in microseconds. The empty asm statement with x as
// an in/out register operand tells the compiler the value may change between iterations, so
// each increment is really executed (one add per iteration, nothing else: no memory traffic).
// The loops workload's closing-note check is that wall time grows linearly with M.
#pragma once

#include <cstdint>

namespace schedlab {

inline std::uint64_t count_up(std::uint64_t iterations) {
  std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    ++x;
    asm volatile("" : "+r"(x));
  }
  return x;
}

}  // namespace schedlab
