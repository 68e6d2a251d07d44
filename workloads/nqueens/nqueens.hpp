// nqueens: count the placements of N non-attacking queens, one task per legal partial
// placement (see nqueens.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "../workload.hpp"

namespace schedlab {

struct NqueensParams {
  int n = 12;  // the board; 14 is the field's size (libfork, tzcnt/runtime-benchmarks, BOTS)
};

// The largest board accepted: solutions(20) = 39,029,188,884 still has a known answer, and one
// more row multiplies the tree by about 8 (hours of tasks on a laptop).
inline constexpr int kNqueensMaxN = 20;

// Solutions of the N-queens puzzle, N = 1..kNqueensMaxN (OEIS A000170).
std::uint64_t nqueens_solutions(int n);
// Tasks one run spawns, the root excluded: the nodes of the search tree (every legal placement
// of the first k queens, k = 1..N, dead ends included), where this file's table has them
// (N <= 17); nullopt beyond.
std::optional<std::uint64_t> nqueens_tasks(int n);

// Throws std::invalid_argument for n outside 1..kNqueensMaxN.
std::unique_ptr<Workload> make_nqueens(NqueensParams params);

}  // namespace schedlab
