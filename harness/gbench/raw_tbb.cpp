// raw_tbb: fib as a oneTBB user writes it, with no schedlab type in the recursion.
//
// The `tbb` scheduler maps schedlab's task API onto task_group (schedulers/tbb/tbb.cpp); what
// that mapping costs per task is the difference between its rows and these. Both run in an
// arena of --threads slots under a global_control of the same size, with worker threads of the
// same stack (the scheduler's default --thread-stack: oneTBB sets its workers' stack once per
// process, so the raw rows must not start the pool with a smaller one), so the difference is the
// code between the task bodies and oneTBB, and the scheduler's hand-off of each run to its own
// root thread (here the calling thread joins the arena).
#include "raw_tbb.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include "fib/fib.hpp"
#include "thread_stack.hpp"

namespace schedlab {
namespace {

std::uint64_t go_shape(int n, int cutoff, int base) {
  if (n <= base || n <= cutoff) return fib_serial_go(n, base);
  std::uint64_t a = 0, b = 0;
  tbb::task_group g;
  g.run([&a, n, cutoff, base] { a = go_shape(n - 1, cutoff, base); });
  g.run([&b, n, cutoff, base] { b = go_shape(n - 2, cutoff, base); });
  g.wait();
  return a + b;
}

std::uint64_t cilk_shape(int n, int cutoff) {
  if (n < 2 || n <= cutoff) return fib_serial_cilk(n);
  std::uint64_t a = 0;
  tbb::task_group g;
  g.run([&a, n, cutoff] { a = cilk_shape(n - 1, cutoff); });
  const std::uint64_t b = cilk_shape(n - 2, cutoff);
  g.wait();
  return a + b;
}

}  // namespace

struct RawTbbFib::Arena {
  explicit Arena(unsigned threads)
      : limit(tbb::global_control::max_allowed_parallelism, threads),
        stack(tbb::global_control::thread_stack_size, kDefaultThreadStackBytes),
        arena(static_cast<int>(threads)) {
    arena.initialize();
  }
  tbb::global_control limit;
  tbb::global_control stack;
  tbb::task_arena arena;
};

RawTbbFib::RawTbbFib(unsigned threads) : arena_(std::make_unique<Arena>(threads)) {}
RawTbbFib::~RawTbbFib() = default;

std::uint64_t RawTbbFib::fib_go(int n, int cutoff, int base) {
  std::uint64_t r = 0;
  arena_->arena.execute([&r, n, cutoff, base] { r = go_shape(n, cutoff, base); });
  return r;
}

std::uint64_t RawTbbFib::fib_cilk(int n, int cutoff) {
  std::uint64_t r = 0;
  arena_->arena.execute([&r, n, cutoff] { r = cilk_shape(n, cutoff); });
  return r;
}

}  // namespace schedlab
