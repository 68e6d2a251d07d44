// locality: a divide-and-conquer pass over an array in which children reuse what their parent
// just wrote (see locality.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "../workload.hpp"

namespace schedlab {

// How a node goes over its region (locality.cpp says why there are two).
enum class LocalityAccess {
  sweep,  // front to back, every element
  chase,  // a dependent walk over a seeded random permutation of its 64-byte lines
};

struct LocalityParams {
  std::uint64_t bytes = 32u << 20;  // the whole array (the registry sizes it from the caches)
  std::uint64_t leaf = 256u << 10;  // a region this small is a leaf (likewise)
  std::uint64_t passes = 4;         // passes each node makes over its region
  LocalityAccess access = LocalityAccess::sweep;
};

std::unique_ptr<Workload> make_locality(LocalityParams params);

}  // namespace schedlab
