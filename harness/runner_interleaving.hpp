// runner_interleaving.hpp: a group of configurations measured interleaved (Group), repetition i
// of every block before repetition i+1 of any, in an order shuffled anew for each repetition.
//
// Invariants: a block stays one configuration's cases back to back in one repetition; the group
// owns its blocks, and when it goes it destroys their subjects first, then cleans up their
// workloads, and hands every case's result to the RunState, whatever happened. Executed only by
// the runner's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <vector>

#include "plan.hpp"
#include "runner_state.hpp"
#include "runner_subjects.hpp"

namespace schedlab::runner {

// Configurations measured interleaved: repetition i of every block before repetition i+1 of
// any, the blocks and the cases within each block in an order shuffled anew for each
// repetition. A slow phase of the machine (a few seconds) then falls on a few repetitions of
// every configuration of the part, not on most repetitions of one, whose verdict it would
// decide. A block stays one configuration's cases back to back in one repetition, so every
// paired comparison (and the claims' "growth" from 1 to N threads) is within a block as before.
//
// The group owns its blocks: its destructor destroys the subjects, then cleans up the workloads
// (their files), and keeps the results, whatever happened.
class Group {
 public:
  explicit Group(RunState& run) : run_(run) {}
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  bool empty() const { return blocks_.empty(); }
  std::size_t size() const { return blocks_.size(); }
  std::uint64_t input_bytes() const {
    std::uint64_t n = 0;
    for (const Block& b : blocks_) n += b.input_bytes;
    return n;
  }

  // Prepares the configuration [first, last) (cases sharing a workload and its parameters) as
  // block `index`, measuring the memory its inputs take.
  void add(const Case* first, const Case* last, unsigned index);
  // Takes back the block add() made last, before anything ran in it: it goes to the next group.
  void drop_last() {
    cleanup(blocks_.back());
    blocks_.pop_back();
  }
  std::vector<unsigned> indices() const {
    std::vector<unsigned> out;
    for (const Block& b : blocks_) out.push_back(b.index);
    return out;
  }

  // Every repetition of every block, then the replacements of the flagged ones
  // (runner_replacements.hpp). Returns false when a stop was requested. Throws what a failed run
  // threw.
  bool run();

 private:
  void cleanup(Block& b) {
    if (b.workload && b.prepared) b.workload->cleanup();
  }

  RunState& run_;
  std::deque<Block> blocks_;  // a deque: LiveCase addresses stay put as blocks are added
  SubjectCache subjects_{run_, blocks_};
};

// The sidecar's `interleaving`: the rule, and the parts the budgets split (runner_grouping.hpp).
nlohmann::json interleaving_record(const RunState& run);

}  // namespace schedlab::runner
