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

inline constexpr int kFibMaxN = 50;  // fib(50) = 12586269025; beyond, the run would take hours
inline constexpr int kFibSeedBase = 2;  // the go shape's default base case (FibParams::base)

struct FibParams {
  int n = 27;
  int cutoff = 0;  // calls with n <= cutoff run serially, spawning nothing; 0: no cutoff
  // The go shape's base case: calls with n <= base return at once. 2 (the default) is the seed's
  // Go program, fib(1) = fib(2) = 1; 1 is tzcnt/runtime-benchmarks' fib, fib(n) = n for n < 2,
  // whose fib(2) spawns fib(1) and fib(0). The cilk shape's base is always 1 (libfork's).
  int base = kFibSeedBase;
};


std::uint64_t fib_reference(int n);                          // iterative, for checking
// Serial leaves, with the base case of each shape (go: fib(1) = fib(2) = 1; cilk, and go with
// base 1: fib(n) = n for n < 2); both compute the standard sequence for n >= 1. Plain
// recursion, no schedlab type: the raw oneTBB reference (harness/gbench/raw_tbb.cpp) uses the
// same leaves.
std::uint64_t fib_serial_go(int n);
std::uint64_t fib_serial_cilk(int n);
// The serial leaf of a go-shape call with this base case.
std::uint64_t fib_serial_go(int n, int base);
// The two shapes over an execution type (api.hpp): Tasks must run inside Scheduler::run,
// Elision is the sequential elision (instantiated for both in fib.cpp).
template <class X = Tasks>
std::uint64_t fib_go(int n, int cutoff, int base = kFibSeedBase);
template <class X = Tasks>
std::uint64_t fib_cilk(int n, int cutoff);
// Tasks one call tree spawns (`base`: the go shape's; the cilk shape has none).
std::uint64_t fib_tasks(FibShape shape, int n, int cutoff, int base = kFibSeedBase);

std::unique_ptr<Workload> make_fib(FibShape shape, FibParams params);

}  // namespace schedlab
