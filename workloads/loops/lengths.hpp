// lengths.hpp: the per-task loop lengths of the loops workload.
//
// The go-runtime reference (workloads/go/loops.go) computes the same lengths with the same
// arithmetic, so that both sides run exactly the same work: keep the two in step.
//
//   uniform     every task runs `iters` iterations.
//   one-long    one task runs iters*tasks/2 (half of the uniform total), the others `iters`:
//               one task that a design must not leave queued behind short ones. `long_at` puts
//               it first (task 0, spawned first), last (spawned last) or at a position drawn
//               from splitmix64(seed). Where it sits matters: an owner popping LIFO runs the
//               last-spawned task first, a thief takes the oldest tasks, and FIFO runs task 0
//               first; the claims compare the designs with the long task at each place.
//   heavy-tail  Pareto lengths, alpha = 1.5 and mean `iters` (scale xm = iters*(alpha-1)/alpha),
//               from splitmix64 seeded with `seed`, clamped to [1, iters*tasks/4]: a few
//               long tasks among many short ones, with a finite mean and an infinite variance.
//
// Pareto by inversion is xm / (1-u)^(1/alpha) for u uniform in [0, 1). A libm pow() is not
// bit-for-bit the same from one library to another (Go's math.Pow is not glibc's pow), and a
// length floor()ed from a value one ulp apart can differ by one. With alpha = 3/2 the power is
// (1-u)^(2/3) = cbrt((1-u)^2), so it is computed here with operations that IEEE 754 rounds
// exactly (+, *, /, frexp, ldexp): a fixed number of Newton steps for the cube root. Every step
// is immune to fused multiply-add contraction too (the only product feeding an addition, 2*y,
// is exact), so both languages get the same bits on any target.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace schedlab {

namespace loop_lengths_detail {

// splitmix64 (Steele, Lea and Flood), with the constants of its reference implementation.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

// The cube root of a > 0, the same bits on every platform (see the header comment).
inline double portable_cbrt(double a) {
  int e = 0;
  double f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  const int r = ((e % 3) + 3) % 3;
  f = std::ldexp(f, r);  // now f in [0.5, 4) and e - r divisible by 3
  e -= r;
  // Newton for y^3 = f from y = 1: it converges quadratically, to within a few ulps of the
  // cube root after 7 steps on [0.5, 4). A fixed step count, so the result's bits are fixed.
  double y = 1.0;
  for (int i = 0; i < 8; ++i) y = (2.0 * y + f / (y * y)) / 3.0;
  return std::ldexp(y, e / 3);
}

}  // namespace loop_lengths_detail

// Iterations of each of `tasks` loop tasks, in spawn order. Throws std::invalid_argument for
// an unknown skew or long_at, or when iters*tasks does not fit in 64 bits.
inline std::vector<std::uint64_t> loop_lengths(std::uint64_t tasks, std::uint64_t iters,
                                               std::string_view skew, std::uint64_t seed,
                                               std::string_view long_at = "first") {
  if (skew != "uniform" && skew != "one-long" && skew != "heavy-tail") {
    throw std::invalid_argument("--skew " + std::string(skew) +
                                ": unknown; use uniform, one-long or heavy-tail");
  }
  if (long_at != "first" && long_at != "last" && long_at != "random") {
    throw std::invalid_argument("--long-at " + std::string(long_at) + ": unknown; use first, last or random");
  }
  if (tasks != 0 && iters > std::numeric_limits<std::uint64_t>::max() / tasks) {
    throw std::invalid_argument("--tasks " + std::to_string(tasks) + " times --iters " +
                                std::to_string(iters) + " overflows 64 bits; lower either");
  }
  std::vector<std::uint64_t> lengths(tasks, iters);
  if (skew == "one-long" && tasks > 0) {
    const std::uint64_t at = long_at == "first"  ? 0
                             : long_at == "last" ? tasks - 1
                                                 : loop_lengths_detail::SplitMix64(seed).next() % tasks;
    lengths[at] = iters * tasks / 2;
  } else if (skew == "heavy-tail") {
    constexpr double alpha = 1.5;
    const double xm = static_cast<double>(iters) * (alpha - 1.0) / alpha;
    const std::uint64_t cap = std::max<std::uint64_t>(1, iters * tasks / 4);
    loop_lengths_detail::SplitMix64 rng(seed);
    for (std::uint64_t& length : lengths) {
      const double u = static_cast<double>(rng.next() >> 11) * 0x1p-53;  // [0, 1)
      const double v = 1.0 - u;                                          // (0, 1], exact
      const double x = std::floor(xm / loop_lengths_detail::portable_cbrt(v * v));
      length = x < 1.0 ? 1 : x >= static_cast<double>(cap) ? cap : static_cast<std::uint64_t>(x);
    }
  }
  return lengths;
}

}  // namespace schedlab
