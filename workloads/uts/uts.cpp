// uts: Unbalanced Tree Search (Olivier, Huan, Liu, Prins, Dinan, Sadayappan, Tseng: "UTS: An
// Unbalanced Tree Search Benchmark", LCPC 2006), as its distribution defines it (uts.c, rng/)
// and as BOTS and libfork's bench/source/uts run it.
//
// The tree is never stored: each node is a 20-byte random state, and its number of children is
// drawn from that state, each child's state from its parent's and its index (sha1_stream.hpp).
// So a tree is fixed by a handful of parameters, yet nobody can tell a subtree's size without
// searching it: the benchmark of load balancing for trees whose shape is unknown in advance.
//
//   binomial (T3, T3L): the root has floor(b0) children; every other node has m children with
//     probability q and none otherwise. With q m close to 1 the subtrees are as likely to die
//     at once as to run thousands of levels deep: T3 has 4,112,897 nodes and depth 1,572.
//   geometric (T1, T1L, T2): a node at depth h has floor(log(1 - u) / log(1 - p)) children, u
//     its random number in [0, 1), p = 1 / (1 + b_h), i.e. geometrically distributed with mean
//     b_h; `fixed` keeps b_h = b0 down to depth d and 0 below (T1: bushy and shallow), `cyclic`
//     lets it swing with depth (T2). At most 100 children (MAXNUMCHILDREN), except the
//     binomial root.
//
// The double arithmetic is uts.c's, in the same order (log, floor, pow, sin of <cmath>), so the
// trees are the published ones: the check is their node, leaf and depth counts (the root has
// depth 0), from the UTS distribution's sample_trees.sh.
//
// Tasks. Each node computes its children's states, spawns one task per child and waits for
// them all; each child returns its subtree's counts through its own slot. Every node but the
// root is a task, so a run spawns `nodes - 1` tasks, known from the table. (BOTS spawns every
// child too; libfork's ports, its own and its oneTBB one, fork every child but the last, which
// they call inline.) A node's work is one SHA-1 per child plus the drawing of its own number of
// children.
//
// The `mini-` trees are not UTS's: they follow T1's and T3's rules at sizes the conformance and
// sanitizer tests and the quick preset can afford. Their sizes were computed by this program,
// whose counts of T1, T2 and T3 are the published ones, and checked against the Go twin
// (workloads/go/uts.go: Go's own SHA-1 and math library).
#include "uts.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "api.hpp"
#include "sha1_stream.hpp"

namespace schedlab {
namespace {

constexpr int kMaxChildren = 100;  // uts.h's MAXNUMCHILDREN; the binomial root is exempt

struct Node {
  Sha1State state;
  int height;  // the root is at 0
};

// uts.c's rng_toProb: a 31-bit random number as a probability in [0, 1).
double to_probability(std::int32_t n) { return n < 0 ? 0.0 : static_cast<double>(n) / 2147483648.0; }

// uts.c's uts_numChildren_geo: the mean b_h at this depth, then an inverse geometric CDF.
int geometric_children(const UtsTree& t, const Node& node) {
  double b = t.b0;
  const int depth = node.height;
  if (depth > 0) {
    switch (t.shape) {
      case UtsShape::expdec:
        b = t.b0 * std::pow(static_cast<double>(depth), -std::log(t.b0) / std::log(static_cast<double>(t.gen_mx)));
        break;
      case UtsShape::cyclic:
        b = depth > 5 * t.gen_mx
                ? 0.0
                : std::pow(t.b0, std::sin(2.0 * 3.141592653589793 * static_cast<double>(depth) / static_cast<double>(t.gen_mx)));
        break;
      case UtsShape::fixed:
        b = depth < t.gen_mx ? t.b0 : 0;
        break;
      case UtsShape::linear:
        b = t.b0 * (1.0 - static_cast<double>(depth) / static_cast<double>(t.gen_mx));
        break;
    }
  }
  const double p = 1.0 / (1.0 + b);
  const double u = to_probability(sha1_stream_rand(node.state));
  // b = 0 gives p = 1 and log(0) = -inf: a quotient of -0.0, no children.
  return static_cast<int>(std::floor(std::log(1 - u) / std::log(1 - p)));
}

// uts.c's uts_numChildren, with its caps.
int children(const UtsTree& t, const Node& node) {
  if (t.type == UtsType::binomial) {
    if (node.height == 0) return static_cast<int>(std::floor(t.b0));
    return to_probability(sha1_stream_rand(node.state)) < t.q ? t.m : 0;
  }
  return std::min(geometric_children(t, node), kMaxChildren);
}

template <class X>
UtsCount visit(const UtsTree& t, const Node& node) {
  const int k = children(t, node);
  if (k <= 0) return {1, 1, static_cast<std::uint64_t>(node.height)};
  std::vector<UtsCount> below(static_cast<std::size_t>(k));
  {
    typename X::WaitGroup wg;
    for (int i = 0; i < k; ++i) {
      const Node child{sha1_stream_child(node.state, i), node.height + 1};
      UtsCount* slot = &below[static_cast<std::size_t>(i)];
      wg.go([&t, slot, child] { *slot = visit<X>(t, child); });
    }
    wg.wait();
  }
  UtsCount total{1, 0, 0};
  for (const UtsCount& c : below) {
    total.nodes += c.nodes;
    total.leaves += c.leaves;
    total.depth = std::max(total.depth, c.depth);
  }
  return total;
}

template <class X>
UtsCount search(const UtsTree& t) {
  return visit<X>(t, Node{sha1_stream_root(t.seed), 0});
}

class UtsWorkload final : public ElidableWorkload<UtsWorkload> {
 public:
  explicit UtsWorkload(const UtsTree& t) : tree_(t) {}

  template <class X>
  void body() {
    result_ = search<X>(tree_);
  }

  std::string check() override {
    if (result_.nodes == tree_.nodes && result_.leaves == tree_.leaves && result_.depth == tree_.depth) return {};
    auto counts = [](std::uint64_t nodes, std::uint64_t leaves, std::uint64_t depth) {
      return std::to_string(nodes) + " nodes, " + std::to_string(leaves) + " leaves, depth " + std::to_string(depth);
    };
    return std::string("uts ") + tree_.name + " had " + counts(result_.nodes, result_.leaves, result_.depth) +
           ", expected " + counts(tree_.nodes, tree_.leaves, tree_.depth);
  }

  std::optional<std::uint64_t> expected_tasks() const override { return tree_.nodes - 1; }

 private:
  const UtsTree& tree_;
  UtsCount result_;
};

constexpr const char* kSampleTrees = "UTS distribution, sample_trees.sh";
constexpr const char* kComputedHere = "computed by this program and its Go twin (not a UTS tree)";

}  // namespace

const std::vector<UtsTree>& uts_trees() {
  // name, type, shape, d, b0, seed, q, m, nodes, leaves, depth, source
  static const std::vector<UtsTree> trees = {
      {"T1", UtsType::geometric, UtsShape::fixed, 10, 4, 19, 0, 0, 4130071, 3305118, 10, kSampleTrees},
      {"T1L", UtsType::geometric, UtsShape::fixed, 13, 4, 29, 0, 0, 102181082, 81746377, 13, kSampleTrees},
      {"T2", UtsType::geometric, UtsShape::cyclic, 16, 6, 502, 0, 0, 4117769, 2342762, 81, kSampleTrees},
      {"T3", UtsType::binomial, UtsShape::fixed, 0, 2000, 42, 0.124875, 8, 4112897, 3599034, 1572, kSampleTrees},
      {"T3L", UtsType::binomial, UtsShape::fixed, 0, 2000, 7, 0.200014, 5, 111345631, 89076904, 17844, kSampleTrees},
      // T1's rules at depth 5; T3's q and m with 50 root children and seed 52 (depth 48).
      {"mini-T1", UtsType::geometric, UtsShape::fixed, 5, 4, 19, 0, 0, 3987, 3232, 5, kComputedHere},
      {"mini-T3", UtsType::binomial, UtsShape::fixed, 0, 50, 52, 0.124875, 8, 1811, 1590, 48, kComputedHere},
  };
  return trees;
}

const UtsTree& uts_tree(const std::string& name) {
  for (const UtsTree& t : uts_trees()) {
    if (name == t.name) return t;
  }
  std::string names;
  for (const UtsTree& t : uts_trees()) names += (names.empty() ? "" : ", ") + std::string(t.name);
  throw std::invalid_argument("uts --tree " + name + " is not a known tree: choose one of " + names);
}

UtsCount uts_count_sequential(const UtsTree& tree) { return search<Elision>(tree); }

std::unique_ptr<Workload> make_uts(const std::string& tree) { return std::make_unique<UtsWorkload>(uts_tree(tree)); }

}  // namespace schedlab
