// raw_tbb: fib written straight against oneTBB, the reference the `tbb` scheduler's adapter is
// measured against (see raw_tbb.cpp).
#pragma once

#include <cstdint>
#include <memory>

namespace schedlab {

// A oneTBB arena of `threads` slots (the calling thread takes one), limited to `threads` as the
// `tbb` scheduler's arena is, running fib the way a oneTBB user writes it.
class RawTbbFib {
 public:
  explicit RawTbbFib(unsigned threads);
  ~RawTbbFib();
  RawTbbFib(const RawTbbFib&) = delete;
  RawTbbFib& operator=(const RawTbbFib&) = delete;

  // fib(n) in the goroutine shape: both children spawned into one task_group, then wait().
  // Calls with n <= cutoff or n <= base are computed serially, as workloads/fib does.
  std::uint64_t fib_go(int n, int cutoff, int base);
  // fib(n) in the Cilk shape: fib(n-1) spawned, fib(n-2) computed inline, then wait().
  std::uint64_t fib_cilk(int n, int cutoff);

 private:
  struct Arena;
  std::unique_ptr<Arena> arena_;
};

}  // namespace schedlab
