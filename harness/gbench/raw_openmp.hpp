// raw_openmp: fib written straight with OpenMP tasks (GCC's libgomp), the way an OpenMP user
// writes it: the reference the `openmp` scheduler's adapter, and the fiber schedulers, are
// measured against (see raw_openmp.cpp).
#pragma once

#include <cstdint>

#include "fib/fib.hpp"

namespace schedlab {

// fib(n) in one parallel region of `threads` threads, started by the calling thread, whose
// `single` thread runs the root, as the `openmp` scheduler runs each run. The goroutine shape:
// both children `omp task`, then `taskwait`; the Cilk shape: fib(n-1) an `omp task`, fib(n-2)
// computed inline, then `taskwait`. Calls with n <= cutoff, and goroutine-shape calls with
// n <= base (fib.hpp), are computed serially, as workloads/fib does.
std::uint64_t raw_openmp_fib(unsigned threads, FibShape shape, int n, int cutoff, int base);

}  // namespace schedlab
