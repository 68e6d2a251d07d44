// sieve's registry entry (workload_entry.hpp).
#include "entry_params.hpp"
#include "workload_entry.hpp"
#include "sieve/sieve.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_sieve() {
  const SieveParams d;
  WorkloadEntry e{"sieve", "Go's concurrent prime sieve: a generator and a chain of filter tasks linked by unbuffered "
                  "channels, one filter per prime found, up to the --primes-th prime",
                  {integer("primes", static_cast<std::int64_t>(d.primes), 1, static_cast<std::int64_t>(kSieveMaxPrimes),
                           "primes to find (the chain grows a filter task per prime)")},
                  [](const ParamValues& p) { return make_sieve(SieveParams{param_u64(p, "primes")}); }};
  e.rank = 120;
  e.go_twin = true;
  e.waits = TaskWaits::channels;
  e.test_params = {{{"primes", "60"}}, {{"primes", "1"}}};
  e.gbench_defaults = {{"primes", "200"}};
  return {e};
}

}  // namespace schedlab
