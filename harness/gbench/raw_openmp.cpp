// raw_openmp: fib as an OpenMP user writes it, with no schedlab type in the recursion.
//
// The `openmp` scheduler maps schedlab's task API onto `omp task` and `taskwait`
// (schedulers/openmp/openmp.cpp); what that mapping costs per task is the difference between
// its rows and these, and the fiber schedulers' targets are set against these rows (docs/schedulers.md).
// Like the adapter, each call is one parallel region of `threads` threads whose `single` thread
// runs the root, and the region's start and end are inside the measured time; the regions are
// started by the calling thread (gbench's), whose libgomp thread pool is separate from the
// adapter's (libgomp keeps one per thread that starts regions). libgomp runs a task at once,
// undeferred, once more than 64 x threads tasks are queued (docs/platform.md), so at one thread
// most of the tree runs as function calls: that is libgomp as shipped, measured as it is.
#include "raw_openmp.hpp"

namespace schedlab {
namespace {

std::uint64_t go_shape(int n, int cutoff, int base) {
  if (n <= base || n <= cutoff) return fib_serial_go(n, base);
  std::uint64_t a = 0, b = 0;
#pragma omp task default(none) shared(a) firstprivate(n, cutoff, base)
  a = go_shape(n - 1, cutoff, base);
#pragma omp task default(none) shared(b) firstprivate(n, cutoff, base)
  b = go_shape(n - 2, cutoff, base);
#pragma omp taskwait
  return a + b;
}

std::uint64_t cilk_shape(int n, int cutoff) {
  if (n < 2 || n <= cutoff) return fib_serial_cilk(n);
  std::uint64_t a = 0;
#pragma omp task default(none) shared(a) firstprivate(n, cutoff)
  a = cilk_shape(n - 1, cutoff);
  const std::uint64_t b = cilk_shape(n - 2, cutoff);
#pragma omp taskwait
  return a + b;
}

}  // namespace

std::uint64_t raw_openmp_fib(unsigned threads, FibShape shape, int n, int cutoff, int base) {
  std::uint64_t r = 0;
#pragma omp parallel num_threads(threads) default(none) shared(r) firstprivate(shape, n, cutoff, base)
#pragma omp single
  r = shape == FibShape::go ? go_shape(n, cutoff, base) : cilk_shape(n, cutoff);
  return r;
}

}  // namespace schedlab
