// sieve: Go's concurrent prime sieve, a chain of filter tasks linked by unbuffered channels.
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

struct SieveParams {
  std::uint64_t primes = 1000;  // how many primes the chain finds
};

// The n-th prime (nth_prime(1) = 2), by a sequential sieve of Eratosthenes: the check's answer
// and the generator's last number. n in 1..kSieveMaxPrimes.
std::uint64_t nth_prime(std::uint64_t n);
inline constexpr std::uint64_t kSieveMaxPrimes = 1'000'000;

std::unique_ptr<Workload> make_sieve(SieveParams params);

}  // namespace schedlab
