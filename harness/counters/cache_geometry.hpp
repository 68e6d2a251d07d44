// cache_geometry.hpp: the caches the simulator (`--counters sim`) and the per-core model
// (`--counters model`) use, and where their sizes come from.
//
// By default they are this machine's own (machine_caches.hpp's cache_info: sysfs, else CPUID): D1 = the
// L1 data cache, LL = the per-core L2, because the claims they serve are about the core's own
// cache (the seed: a child finds its half "still in cache" on the core that ran its parent). I1 =
// the L1 instruction cache (needed by Valgrind, reported nowhere). Valgrind's own detection is not
// used: on this project's VMs it misreads the L3 (docs/platform.md). `--sim-l1` and `--sim-ll
// SIZE,ASSOC,LINE` override D1 and LL; the model uses the LL geometry, so one option sets both.
// A machine that describes no plausible cache gets a stated assumption (32K,8,64 and 1M,16,64),
// named in the sidecar and on stderr, never a refusal of the default presets.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace schedlab {

struct CacheGeometry {
  std::uint64_t size = 0;   // bytes
  std::uint64_t assoc = 0;  // ways
  std::uint64_t line = 0;   // bytes

  std::uint64_t sets() const { return size / (assoc * line); }
  // Valgrind's spelling, "1048576,8,64".
  std::string text() const;
  nlohmann::json json() const;  // {"size": .., "assoc": .., "line": ..}
};

// Why Valgrind's cache simulator (and the model, which shares its rules) cannot use `g`, in
// Valgrind's own terms: the set count and the line size must be powers of two, a line at least
// 16 bytes, the cache larger than a line. Empty when it can.
std::string geometry_problem(const CacheGeometry& g);

// Parses `SIZE,ASSOC,LINE` (SIZE may carry a K, M or G suffix). Throws ParamError naming
// `option`, the value and the fix when it is malformed or geometry_problem() objects.
CacheGeometry parse_geometry(const std::string& text, const std::string& option);

// The three caches a simulated run uses and where each came from ("sysfs cpu0 L2", "--sim-ll").
struct SimGeometry {
  CacheGeometry i1, d1, ll;
  std::string i1_from, d1_from, ll_from;
  nlohmann::json json() const;  // for the sidecar
  bool assumed() const;         // D1 or LL is the assumption, not this machine's
};

// This machine's caches, with `l1` / `ll` (when not empty) overriding D1 / LL; where the machine
// describes no usable one, the assumption, its `from` saying so and naming the option. Throws
// ParamError for a malformed option.
SimGeometry resolve_sim_geometry(const std::string& l1, const std::string& ll);

}  // namespace schedlab
