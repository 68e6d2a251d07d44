// locality: a divide-and-conquer pass over an array in which children reuse what their parent
// just wrote (see locality.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

struct LocalityParams {
  std::uint64_t bytes = 32u << 20;  // the whole array (the registry defaults it to 16 x L2)
  std::uint64_t leaf = 256u << 10;  // a region this small is a leaf (default L2 / 8)
  std::uint64_t passes = 4;         // sweeps each node makes over its region
};

std::unique_ptr<Workload> make_locality(LocalityParams params);

}  // namespace schedlab
