// runner_replacements.cpp: see runner_replacements.hpp; the rule, the budget, and the wait for a
// steady machine before each round.
#include "runner_replacements.hpp"

#include <algorithm>
#include <string>
#include <thread>

#include "machine_load.hpp"
#include "runner_repetition.hpp"
#include "speed_probe.hpp"

namespace schedlab::runner {

namespace {

// The sidecar's word on replacement repetitions.
constexpr char kReplacementRule[] =
    "a row flagged slow_cpu or noisy is left out of the claims; after the run's repetitions of a group of "
    "configurations, each block with such rows is measured again, one extra repetition per flagged block "
    "repetition (those flagged in turn included), at most max_per_block extra per block, in rounds interleaved "
    "and shuffled like the others (rep = reps, reps + 1, ...), within a time budget: the replacements and the "
    "waits before them take at most budget_share of the time the group's planned repetitions took. Before each "
    "round the runner waits, up to max_wait_s and half of what is left of the budget, until other processes use "
    "under the "
    "`noisy` share of each CPU over 0.1 s and the CPUs' speed holds still over it. `blocks` gives the extra "
    "repetitions per block_index; `waits` the rounds, the seconds waited and the rounds that ran after the "
    "longest wait with the machine still unsteady; `groups` each group's planned seconds, its budget and what "
    "it used; `unreplaced` the flagged block repetitions per block_index that the budget (or max_per_block) left "
    "unreplaced: the claims leave them out, and the report names them";

// The replacements and waits of a group take at most this share of the time its planned
// repetitions took. A quarter: a preset then finishes within 1.25 times its planned phase
// whatever the machine does (on a fresh cloud VM whose second vCPU stayed 1.5x slower for ten
// minutes, an unbounded rule ran 4,550 replacement repetitions and the quick preset took 25
// minutes instead of 6), and a quiet run's few replacements (6-77 in the quick preset's 5,825
// repetitions) fit many times over.
constexpr double kReplacementBudgetShare = 0.25;

// Before a round of replacements, the runner waits at most this long for a steady machine. The
// phases that flag repetitions last seconds (a co-tenant's bursts of 2-5 s in scripts/cotenant,
// the VM's slow phases of about 2 s), while a short configuration runs its 25 repetitions and its
// replacements in under half a second: without the wait, the replacements of a part that a phase
// covered fall inside the same phase and are flagged in turn. 5 s outlasts most such phases and
// keeps a machine that stays busy from stretching a run by more than 5 s per round.
constexpr std::chrono::milliseconds kSteadyWaitMax{5000};
// The window over which other processes' CPU time is read while waiting: 10 of /proc/stat's
// 10 ms ticks per CPU, enough to see a busy co-tenant (kNoisyMinTicks) and short enough to stop
// waiting soon after it leaves.
constexpr std::chrono::milliseconds kSteadyWindow{100};

// Waits (kSteadyWaitMax at most, and at most `budget_s`, about) until other processes leave every CPU
// and the CPUs' speed holds still; false when the run was interrupted meanwhile. Executed only
// by the runner's thread, between repetitions (the probe pins it).
bool wait_until_steady(RunState& run, double budget_s) {
  const auto start = std::chrono::steady_clock::now();
  const auto limit = std::min<std::chrono::duration<double>>(kSteadyWaitMax, std::chrono::duration<double>(budget_s));
  bool steady = false;
  while (!steady && std::chrono::steady_clock::now() - start < limit) {
    if (g_stop_requested.load()) return false;
    BlockLoad window;
    const bool speed_held = run.probe.steady_over([] { std::this_thread::sleep_for(kSteadyWindow); });
    window.finish();
    steady = speed_held;
    for (unsigned cpu = 0; cpu < run.usable && steady; ++cpu) steady = !window.on({cpu}).noisy.value_or(false);
  }
  ++run.steady_waits;
  if (!steady) ++run.steady_timeouts;
  run.steady_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return true;
}

}  // namespace

bool replace_flagged(RunState& run, SubjectCache& subjects, const std::vector<Block*>& blocks,
                     std::vector<std::vector<LiveCase*>>& orders,
                     std::chrono::steady_clock::time_point planned_start) {
  // Replacements (kReplacementRule): a slow phase of the machine costs the blocks it fell on
  // repetitions, which the claims leave out, so their intervals widen and a verdict can turn
  // inconclusive where a quiet run's held. Each flagged repetition earns its block one more,
  // in rounds over the blocks still short, until none is, each has had its maximum, or the
  // group's budget is spent (a machine that stays disturbed would flag the replacements too).
  const auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  const double planned_s = since(planned_start);
  const double budget_s = kReplacementBudgetShare * planned_s;
  const auto replacing_start = std::chrono::steady_clock::now();
  bool budget_spent = false;
  for (unsigned extra = 0; extra < run.request.replace_flagged && !budget_spent; ++extra) {
    std::vector<std::size_t> short_blocks;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i]->flagged > blocks[i]->replaced) short_blocks.push_back(i);
    }
    if (short_blocks.empty()) break;
    // Half of what is left at most: waiting must not eat the budget the replacements need.
    if (!wait_until_steady(run, (budget_s - since(replacing_start)) / 2)) return false;
    std::shuffle(short_blocks.begin(), short_blocks.end(), run.order);
    for (std::size_t i : short_blocks) {
      // The next repetition of this block is expected to last as long as its last one.
      if (since(replacing_start) + blocks[i]->last_repetition_s > budget_s) {
        budget_spent = true;
        break;
      }
      std::shuffle(orders[i].begin(), orders[i].end(), run.order);
      subjects.build_if_all_fit();
      if (!run_repetition(run, subjects, *blocks[i], orders[i], run.request.reps + extra)) return false;
      ++blocks[i]->replaced;
      run.replaced[std::to_string(blocks[i]->index)] = blocks[i]->replaced;
    }
  }
  nlohmann::json left = nlohmann::json::object();
  std::vector<unsigned> indices;
  for (const Block* b : blocks) {
    if (b->flagged > b->replaced) left[std::to_string(b->index)] = b->flagged - b->replaced;
    indices.push_back(b->index);
  }
  run.unreplaced.update(left);
  run.budgets.push_back({{"blocks", indices},
                         {"planned_s", planned_s},
                         {"budget_s", budget_s},
                         {"used_s", since(replacing_start)},
                         {"spent", budget_spent}});
  return true;
}

nlohmann::json replacements_record(const RunState& run) {
  return {{"rule", kReplacementRule},
          {"max_per_block", run.request.replace_flagged},
          {"max_wait_s", std::chrono::duration<double>(kSteadyWaitMax).count()},
          {"budget_share", kReplacementBudgetShare},
          {"blocks", run.replaced},
          {"groups", run.budgets},
          {"unreplaced", run.unreplaced},
          {"waits",
           {{"rounds", run.steady_waits},
            {"seconds", run.steady_wait_s},
            {"still_unsteady", run.steady_timeouts}}}};
}

}  // namespace schedlab::runner
