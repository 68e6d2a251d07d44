// runner_interleaving.cpp: see runner_interleaving.hpp; preparing a group's blocks and running
// their repetitions in shuffled order.
#include "runner_interleaving.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include "runner_replacements.hpp"
#include "runner_repetition.hpp"
#include "speed_probe.hpp"

namespace schedlab::runner {

namespace {

// The sidecar's word on the order of the measurements.
constexpr char kInterleaving[] =
    "repetition i of every configuration of a part (one entry of a preset's runs, or the command line's "
    "selection) before repetition i+1 of any; the configurations, and the cases within each, in an order "
    "shuffled anew for each repetition (--order-seed); a block is one configuration's cases back to back in "
    "one repetition. `split` lists the parts whose configurations the thread or memory budget split into "
    "groups run one after another (by block_index)";

// This process's resident memory (/proc/self/statm), 0 when it cannot be read.
std::uint64_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

Group::~Group() {
  for (Block& b : blocks_)
    for (LiveCase& l : b.cases) l.subject.reset();
  for (Block& b : blocks_) cleanup(b);
  for (Block& b : blocks_)
    for (LiveCase& l : b.cases) run_.results.push_back(std::move(l.result));
}

void Group::add(const Case* first, const Case* last, unsigned index) {
  Block& b = blocks_.emplace_back();
  b.index = index;
  run_.probe.invalidate();
  b.workload = first->workload->make(first->workload_params);
  // An A/B run's cases run in their builds' servers, which prepare their own copies.
  if (std::any_of(first, last, [](const Case& c) { return c.build.empty(); })) {
    const std::uint64_t before = resident_bytes();
    b.prepared = true;
    b.workload->prepare();
    const std::uint64_t after = resident_bytes();
    b.input_bytes = after > before ? after - before : 0;
  }
  for (const Case* c = first; c != last; ++c) {
    const WorkloadFacts facts{b.workload->work_span_ratio(), b.workload->round_robin_ratio(c->threads)};
    b.cases.push_back(LiveCase{c, b.workload.get(), facts, nullptr, CaseResult{*c, index, {}, {}, NAN}});
  }
}

bool Group::run() {
  std::vector<Block*> blocks;
  std::vector<std::vector<LiveCase*>> orders;  // per block, its cases in the repetition's order
  for (Block& b : blocks_) blocks.push_back(&b);
  for (Block& b : blocks_) {
    orders.emplace_back();
    for (LiveCase& l : b.cases) orders.back().push_back(&l);
  }
  std::vector<std::size_t> order(blocks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto planned_start = std::chrono::steady_clock::now();
  for (unsigned rep = 0; rep < run_.request.reps; ++rep) {
    std::shuffle(order.begin(), order.end(), run_.order);
    for (std::size_t i : order) {
      std::shuffle(orders[i].begin(), orders[i].end(), run_.order);
      subjects_.build_if_all_fit();
      if (!run_repetition(run_, subjects_, *blocks[i], orders[i], rep)) return false;
    }
  }
  return replace_flagged(run_, subjects_, blocks, orders, planned_start);
}

nlohmann::json interleaving_record(const RunState& run) {
  return {{"rule", kInterleaving}, {"split", run.grouped}};
}

}  // namespace schedlab::runner
