// sim.hpp: simulated cache counters (`--counters sim`), the back end for machines without a
// hardware PMU: Valgrind's callgrind with its cache simulator.
//
// A simulated repetition is a child process, `valgrind --tool=callgrind --cache-sim=yes ...
// schedlab simulated-repetition ...` (harness/sim_subject.hpp), that builds the case, runs the
// warm-up, and brackets exactly one repetition's measured region with callgrind's client
// requests: CALLGRIND_ZERO_STATS right before the clock starts and CALLGRIND_DUMP_STATS right
// after it stops. Set-up, warm-up, the result check and teardown are outside the bracket.
// ZERO/DUMP rather than TOGGLE_COLLECT: callgrind's collection state is per thread (measured:
// a toggle on the harness thread does not count the workers), while zeroing and dumping cover
// every thread; and rather than START/STOP_INSTRUMENTATION, which flushes the simulated caches
// at the start (measured), so the region would begin cold where a native run begins warm.
//
// What the simulator sees (docs/counters.md, `schedlab counters` and the sidecar say it in these words):
// Valgrind runs one thread at a time and its cache is one hierarchy shared by all threads. So
// at 1 worker it is exact for the effects of order (LIFO vs FIFO, central vs per-P); at more
// workers it models a shared cache and does not see a task moving between two cores' private
// caches. The migration side stays with the `migrations` counter, and with PAPI where a PMU
// exists.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "counters/cache_geometry.hpp"

namespace schedlab {

// What the simulator sees, in one paragraph (docs/counters.md, `schedlab counters`, the sidecar).
extern const char* const kSimulatorSees;

// What one simulated region counted.
struct SimCounts {
  std::uint64_t instructions = 0;  // Ir
  std::uint64_t l1d_misses = 0;    // D1mr + D1mw
  std::uint64_t ll_misses = 0;     // DLmr + DLmw: data read and write misses of the last level
};

// The valgrind program: $SCHEDLAB_VALGRIND when set and not empty, else `valgrind` on PATH;
// empty when there is none.
std::string valgrind_program();

// Empty when simulated runs can be made here, else why not (one line, with the fix): no
// valgrind, or a build without Valgrind's client-request headers.
std::optional<std::string> simulator_unavailable();

// `valgrind --version`'s answer ("valgrind-3.19.0"), or empty.
std::string valgrind_version();

// The start of the command that runs `program args...` under the simulator, writing the
// region's counts to `out_file` (callgrind writes the dump as `out_file.1`).
std::vector<std::string> simulator_command(const SimGeometry& geometry, const std::string& out_file);

// Reads the region's dump written by a run of simulator_command(): the `events:` and `totals:`
// lines of `out_file.1`. Throws std::runtime_error naming the file when it is missing or lacks
// them. (`totals:`, not `summary:`: with several threads callgrind's summary keeps the costs a
// thread had before CALLGRIND_ZERO_STATS; the totals, summed from the cost lines, do not.)
SimCounts read_region_counts(const std::string& out_file);

// The bracket, called by the measured child around the region; no-ops natively.
void simulated_region_begin();
void simulated_region_end();

}  // namespace schedlab
