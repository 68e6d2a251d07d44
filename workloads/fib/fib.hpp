// fib: the fork-join workload of the seeds, in two shapes (see fib.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

enum class FibShape {
  go,    // every call with n > 2 spawns fib(n-1) and fib(n-2) and joins both (goroutines + channels)
  cilk,  // spawn fib(n-1), compute fib(n-2) inline, join (the Cilk shape)
};

struct FibParams {
  int n = 27;
  int cutoff = 0;  // calls with n <= cutoff run serially, spawning nothing; 0: no cutoff
};

inline constexpr int kFibMaxN = 50;  // fib(50) = 12586269025; beyond, the run would take hours

std::uint64_t fib_reference(int n);                          // iterative, for checking
// Serial leaves, with the base case of each shape (go: fib(1) = fib(2) = 1; cilk: fib(n) = n
// for n < 2); both compute the standard sequence for n >= 1. Plain recursion, no schedlab type:
// the raw oneTBB reference (harness/gbench/raw_tbb.cpp) uses the same leaves.
std::uint64_t fib_serial_go(int n);
std::uint64_t fib_serial_cilk(int n);
// The two shapes over an execution type (api.hpp): Tasks must run inside Scheduler::run,
// Elision is the sequential elision (instantiated for both in fib.cpp).
template <class X = Tasks>
std::uint64_t fib_go(int n, int cutoff);
template <class X = Tasks>
std::uint64_t fib_cilk(int n, int cutoff);
std::uint64_t fib_tasks(FibShape shape, int n, int cutoff);  // tasks one call tree spawns

std::unique_ptr<Workload> make_fib(FibShape shape, FibParams params);

}  // namespace schedlab
