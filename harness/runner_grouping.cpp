// runner_grouping.cpp: see runner_grouping.hpp.
#include "runner_grouping.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <utility>

#include "chrome_trace.hpp"
#include "memory_budget.hpp"
#include "runner_interleaving.hpp"
#include "runner_subjects.hpp"

namespace schedlab::runner {

namespace {

// The share of the memory budget (memory_budget.hpp) the prepared inputs of the configurations
// interleaved together may hold (locality's arrays, matmul's matrices): half, so that the runs'
// own live tasks keep the other half.
constexpr double kInputShare = 0.5;

// The configurations [first, last) of one part (each a run of consecutive cases sharing a
// workload and its parameters), interleaved as one group (Group) when they fit the budgets
// together: their worker threads within kLiveThreadBudget, their prepared inputs within
// kInputShare of the memory budget. Otherwise they are split, in order, into groups that fit,
// run one after another, and the sidecar's `interleaving` names the groups and why. Returns false
// when a stop was requested.
bool run_part(const std::vector<std::pair<const Case*, const Case*>>& configs, RunState& run) {
  const unsigned first_block = run.next_block;
  run.next_block += static_cast<unsigned>(configs.size());
  const std::uint64_t budget = memory_budget().bytes;
  const double input_cap = budget == 0 ? INFINITY : kInputShare * static_cast<double>(budget);
  nlohmann::json groups = nlohmann::json::array();
  std::set<std::string> why;
  for (std::size_t next = 0; next < configs.size();) {
    Group group(run);
    unsigned threads = 0;
    while (next < configs.size()) {
      const auto [first, last] = configs[next];
      const unsigned need = live_threads(first, last);
      if (!group.empty() && threads + need > kLiveThreadBudget) {
        why.insert("their schedulers would hold more than " + std::to_string(kLiveThreadBudget) +
                   " worker threads together");
        break;
      }
      group.add(first, last, first_block + static_cast<unsigned>(next));
      if (group.size() > 1 && static_cast<double>(group.input_bytes()) > input_cap) {
        group.drop_last();
        why.insert("their prepared inputs would hold more than " + std::to_string(static_cast<int>(kInputShare * 100)) +
                   "% of the memory budget together");
        break;
      }
      threads += need;
      ++next;
    }
    groups.push_back(group.indices());
    if (groups.size() > 1) {  // said before the group runs, so that a stop or a failure keeps it
      std::string reasons;
      for (const std::string& w : why) reasons += (reasons.empty() ? "" : "; ") + w;
      if (groups.size() == 2) run.grouped.push_back(nullptr);
      run.grouped.back() = {{"blocks", groups}, {"why", reasons}};
    }
    if (!group.run()) return false;
  }
  return true;
}

}  // namespace

RunStatus run_blocks(const std::vector<Case>& cases, RunState& run) {
  for (std::size_t first = 0; first < cases.size();) {
    // A part's configurations: runs of consecutive cases with one workload and its parameters
    // (plan() lists a part's cases configuration by configuration). Simulated cases form
    // configurations of their own (their wall time is Valgrind's, never compared with a native
    // run's).
    std::vector<std::pair<const Case*, const Case*>> configs;
    std::size_t last = first;
    while (last < cases.size() && cases[last].part == cases[first].part) {
      std::size_t end = last;
      while (end < cases.size() && cases[end].part == cases[last].part && cases[end].workload == cases[last].workload &&
             cases[end].workload_params == cases[last].workload_params &&
             cases[end].simulated == cases[last].simulated) {
        ++end;
      }
      configs.emplace_back(cases.data() + last, cases.data() + end);
      last = end;
    }
    if (!run_part(configs, run)) return RunStatus::interrupted;
    first = last;
  }
  if (ChromeTrace* timeline = run.out.trace()) {
    timeline->write();
    std::fprintf(stderr, "schedlab: trace written to %s%s\n", run.request.trace_path.c_str(),
                 timeline->dropped() == 0 ? ""
                                          : (" (cap reached: " + std::to_string(timeline->dropped()) +
                                             " events dropped; raise --trace-max-events or trace fewer cases)").c_str());
  }
  return RunStatus::complete;
}

}  // namespace schedlab::runner
