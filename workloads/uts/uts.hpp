// uts: Unbalanced Tree Search, the UTS distribution's benchmark of dynamic load balance
// (see uts.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../workload.hpp"

namespace schedlab {

// How a node's number of children is drawn (uts.c's tree types; hybrid and balanced trees are
// not among the named trees and are left out).
enum class UtsType {
  binomial,   // the root has b0 children; every other node m children with probability q, else none
  geometric,  // a geometric number of children with mean b_i, b_i given by the shape at each depth
};
// The geometric trees' b_i as a function of depth (uts.c's shape functions).
enum class UtsShape { linear, expdec, cyclic, fixed };

// One named tree: UTS's parameters and the sizes the tree must have.
struct UtsTree {
  const char* name;
  UtsType type;
  UtsShape shape;      // geometric trees
  int gen_mx;          // geometric trees: the depth parameter d
  double b0;           // the root's branching factor
  std::int32_t seed;   // r: the root's random state
  double q;            // binomial trees: probability of having children
  int m;               // binomial trees: children of a node that has any
  std::uint64_t nodes, leaves, depth;
  const char* source;  // where the sizes come from
};

// The named trees, standard ones first (docs/workloads.md).
const std::vector<UtsTree>& uts_trees();
// The tree of that name. Throws std::invalid_argument naming the known trees.
const UtsTree& uts_tree(const std::string& name);

struct UtsCount {
  std::uint64_t nodes = 0, leaves = 0, depth = 0;
};
// The tree searched sequentially, without any task: for tests and for computing a new tree's
// sizes.
UtsCount uts_count_sequential(const UtsTree& tree);

std::unique_ptr<Workload> make_uts(const std::string& tree);

}  // namespace schedlab
