// locality's registry entry (workload_entry.hpp). Sized from this machine's caches
// (locality_sizing.hpp) unless --bytes or --leaf say otherwise.
#include "entry_params.hpp"
#include "locality/locality.hpp"
#include "locality/locality_sizing.hpp"
#include "workload_entry.hpp"

namespace schedlab {
namespace {

ParamSpec size_auto(std::string name, std::string help) {
  ParamSpec s = size(std::move(name), "auto", 64, std::int64_t{1} << 36, std::move(help));
  s.allows_auto = true;
  return s;
}

void settle_locality(ParamValues& p) {
  const LocalitySizing& sizes = locality_sizing();
  const bool chase = param_str(p, "access") == "chase";
  if (param_str(p, "bytes") == "auto") p["bytes"] = std::to_string(chase ? sizes.chase_bytes : sizes.sweep_bytes);
  if (param_str(p, "leaf") == "auto") p["leaf"] = std::to_string(chase ? sizes.chase_leaf : sizes.sweep_leaf);
}

}  // namespace

std::vector<WorkloadEntry> workload_entries_locality() {
  WorkloadEntry e{"locality", "recursive halving over an array sized from the caches: each child goes over the half its parent just wrote",
                  {size_auto("bytes", "array size, a power of two (default auto: sweep 16 x this machine's L2, chase the smallest "
                                      "power of two at least twice its last-level cache)"),
                   size_auto("leaf", "regions this small are leaves, a power of two (default auto: sweep L2 / 8, chase L2 / 2)"),
                   integer("passes", 4, 1, 1000, "passes each node makes over its region"),
                   choice("access", "sweep", {"sweep", "chase"},
                          "how a node goes over its region: sweep, front to back (the hardware prefetcher streams it), or "
                          "chase, a dependent walk over a seeded random permutation of its lines (every miss costs a full "
                          "latency)")},
                  [](ParamValues p) {
                    settle_locality(p);
                    return make_locality(LocalityParams{param_u64(p, "bytes"), param_u64(p, "leaf"), param_u64(p, "passes"),
                                                        param_str(p, "access") == "chase" ? LocalityAccess::chase
                                                                                          : LocalityAccess::sweep});
                  },
                  settle_locality};
  e.rank = 50;
  e.sizing = [] { return locality_sizing().json(); };
  e.test_params = {{{"bytes", "1M"}, {"leaf", "64K"}, {"passes", "2"}},
                   {{"bytes", "1M"}, {"leaf", "64K"}, {"passes", "2"}, {"access", "chase"}}};
  return {e};
}

}  // namespace schedlab
