// nqueens: the N-queens search, the field's benchmark of irregular fork-join (libfork's
// bench/source/nqueens, tzcnt/runtime-benchmarks, BOTS).
//
// A node holds the columns of the queens on rows 0 .. row-1. It tries every column of the next
// row, spawns one task for each column no queen attacks (same column or diagonal), and joins
// them all; a node with all N queens placed is one solution, a node with no legal column a dead
// end. The answer is the number of solutions: 14,200 for N = 12, 365,596 for the field's N = 14
// (the table below, OEIS A000170, up to N = 20). The tasks are small and their number per node
// varies from 0 to N: between fib's regularity and UTS's imbalance.
//
// The shape is libfork's and tzcnt's (a board copied into each child, the same legality test),
// except that every legal child is spawned: their oneTBB ports run the last legal child inline
// (run_and_wait), which gives them fewer tasks than this tree by the number of inner nodes
// (docs/workloads.md: what that does to the ratios of the literature table).
//
// Exactly once. Every task returns its subtree's solutions *and* its number of nodes, summed
// through the joins. The node count must equal the table of search-tree sizes below (computed
// with an independent bitboard search; N <= 17), which is also expected_tasks(). Beyond the
// table (N = 18..20) the count is not known in advance: expected_tasks() says so (nullopt), and
// tasks_of_last_run() returns the number of nodes the last run carried through its joins, which
// every run checks against the scheduler's tasks_executed (measure.cpp). A task that ran twice is joined once, so it
// adds to tasks_executed but not to the carried count; a task that never ran never returns to
// its join, so the run cannot finish: either way the two counts cannot agree by accident.
#include "nqueens.hpp"

#include <array>
#include <stdexcept>
#include <string>

#include "api.hpp"

namespace schedlab {
namespace {

// OEIS A000170, N = 1..20 (index 0 unused).
constexpr std::uint64_t kSolutions[kNqueensMaxN + 1] = {
    0,         1,          0,           0,           2,           10,     4,
    40,        92,         352,         724,         2680,        14200,  73712,
    365596,    2279184,    14772512,    95815104,    666090624,   4968057848ULL,
    39029188884ULL};

// Nodes of the search tree, the root (the empty board) included, N = 1..17 (index 0 unused):
// counted with a bitboard depth-first search that shares no code with this file. The number of
// tasks a run spawns is one less. Checked: the leaves at depth N are the solutions above.
constexpr std::uint64_t kTreeNodes[] = {
    0,        2,         3,          6,          17,          54,
    153,      552,       2057,       8394,       35539,       166926,
    856189,   4674890,   27358553,   171129072,  1141190303,  8017021932ULL};
constexpr int kTreeTableMax = static_cast<int>(std::size(kTreeNodes)) - 1;

using Board = std::array<std::int8_t, kNqueensMaxN>;  // board[r]: the column of row r's queen

struct Count {
  std::uint64_t solutions = 0;
  std::uint64_t nodes = 0;  // this node and every node below it
};

// True when a queen in column `col` of row `row` is attacked by none of rows 0 .. row-1.
bool legal(const Board& board, int row, int col) {
  for (int r = 0; r < row; ++r) {
    const int other = board[r];
    const int distance = row - r;
    if (col == other || col == other - distance || col == other + distance) return false;
  }
  return true;
}

template <class X>
Count search(int n, int row, const Board& board) {
  if (row == n) return {1, 1};
  std::array<Count, kNqueensMaxN> children;
  int spawned = 0;
  {
    typename X::WaitGroup wg;
    for (int col = 0; col < n; ++col) {
      if (!legal(board, row, col)) continue;
      Board child = board;
      child[row] = static_cast<std::int8_t>(col);
      Count* slot = &children[spawned++];
      wg.go([slot, n, row, child] { *slot = search<X>(n, row + 1, child); });
    }
    wg.wait();
  }
  Count total{0, 1};
  for (int i = 0; i < spawned; ++i) {
    total.solutions += children[i].solutions;
    total.nodes += children[i].nodes;
  }
  return total;
}

class NqueensWorkload final : public ElidableWorkload<NqueensWorkload> {
 public:
  explicit NqueensWorkload(NqueensParams p) : params_(p) {}

  template <class X>
  void body() {
    result_ = search<X>(params_.n, 0, Board{});
  }

  std::string check() override {
    const std::string board = std::to_string(params_.n) + "-queens";
    if (result_.solutions != nqueens_solutions(params_.n)) {
      return board + " found " + std::to_string(result_.solutions) + " solutions, expected " +
             std::to_string(nqueens_solutions(params_.n));
    }
    if (const auto tasks = nqueens_tasks(params_.n); tasks && result_.nodes != *tasks + 1) {
      return board + " searched " + std::to_string(result_.nodes) + " nodes, expected " + std::to_string(*tasks + 1);
    }
    return {};
  }

  // From the table; beyond it not known before running.
  std::optional<std::uint64_t> expected_tasks() const override { return nqueens_tasks(params_.n); }
  // Beyond the table, what the last run carried through its joins (the file's comment says why
  // that still checks exactly-once), and nothing before the first run.
  std::optional<std::uint64_t> tasks_of_last_run() const override {
    if (const auto tasks = expected_tasks()) return tasks;
    if (result_.nodes == 0) return std::nullopt;
    return result_.nodes - 1;
  }

 private:
  const NqueensParams params_;
  Count result_;
};

}  // namespace

std::uint64_t nqueens_solutions(int n) {
  if (n < 1 || n > kNqueensMaxN) throw std::out_of_range("nqueens_solutions: n outside 1..20");
  return kSolutions[n];
}

std::optional<std::uint64_t> nqueens_tasks(int n) {
  if (n < 1 || n > kTreeTableMax) return std::nullopt;
  return kTreeNodes[n] - 1;
}

std::unique_ptr<Workload> make_nqueens(NqueensParams p) {
  if (p.n < 1 || p.n > kNqueensMaxN) {
    throw std::invalid_argument("nqueens --n " + std::to_string(p.n) + " is out of range: use 1 <= n <= " +
                                std::to_string(kNqueensMaxN) + " (20 has the last answer known here; 14 is the field's size)");
  }
  return std::make_unique<NqueensWorkload>(p);
}

}  // namespace schedlab
