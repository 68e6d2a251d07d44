// runner.cpp: execute(), the runner's entry point (runner.hpp): it sets up the run's state, runs
// every part and records in the sidecar what the run did. The runner's concerns each have a file:
//   runner_grouping       the parts, cut into configurations, grouped under the thread and memory
//                         budgets;
//   runner_interleaving   a group's blocks, their repetitions in shuffled order (Group);
//   runner_subjects       the subjects kept live under the thread budget (SubjectCache);
//   runner_repetition     one block repetition, between two speed probes, writing its rows;
//   runner_replacements   the extra repetitions that replace flagged ones, within a time budget;
//   runner_progress       the progress line;
//   runner_outputs        the files a run writes (RunOutputs);
//   runner_state          what they share (RunState, Block, LiveCase).
//
// Invariant: execute() never throws for a failed run: the outcome, and the sidecar it finishes,
// say what happened.
#include "runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <utility>

#include "counters/hw_counters.hpp"
#include "csv.hpp"
#include "machine_timeline.hpp"
#include "metadata.hpp"
#include "runner_grouping.hpp"
#include "runner_interleaving.hpp"
#include "runner_progress.hpp"
#include "runner_replacements.hpp"
#include "runner_state.hpp"
#include "schedtrace.hpp"
#include "served_subject.hpp"
#include "sidecar.hpp"
#include "speed_probe.hpp"

namespace schedlab {

std::atomic<bool> g_stop_requested{false};
std::atomic<bool> g_stopping_now{false};

namespace {

using runner::ProgressLine;
using runner::RunState;

// The sidecar's word on an A/B run.
constexpr char kAbRule[] =
    "every case measured by three servers, long-lived children set up alike: A this binary, A2 this binary again "
    "(the A/A control), B the --against binary; the three in one block, in a shuffled order, each repetition; "
    "B / A paired per block is the build's effect, A2 / A the run's noise floor (scripts/compare RUN.csv)";

const char* status_word(RunStatus s) {
  return s == RunStatus::complete ? "complete" : s == RunStatus::failed ? "failed" : "interrupted";
}

}  // namespace

RunOutcome execute(const RunRequest& r, const std::vector<Case>& cases, RunOutputs& out, HwCounters& events,
                   BuildServers servers) {
  ProgressLine progress(r.progress, cases.size() * r.reps);
  SchedTracer schedtrace(r.schedtrace_ms);
  SpeedProbe probe;
  MachineTimeline timeline(probe.cpus());
  // CPUs of unequal speed from the start (a host state the guest cannot see otherwise) are said
  // at once: the comparisons of P threads with 1 will not be judged while it lasts.
  if (const auto& at_start = probe.calibration(); at_start.size() > 1) {
    const auto [fast, slow] = std::minmax_element(at_start.begin(), at_start.end());
    if (*slow > kUnequalCpuRatio * *fast) {
      std::fprintf(stderr,
                   "schedlab: note: CPU %d runs %.2fx slower than CPU %d now (the speed probe, the same spin): while "
                   "that lasts, comparisons of P threads with 1 thread are not judged\n",
                   probe.cpus()[static_cast<std::size_t>(slow - at_start.begin())], *slow / *fast,
                   probe.cpus()[static_cast<std::size_t>(fast - at_start.begin())]);
    }
  }
  RunState run{r, out, events, progress, schedtrace, probe, timeline, usable_cpus(), 0, 0, 0, {}, std::mt19937_64(r.order_seed)};
  run.servers = std::move(servers);

  RunOutcome outcome;
  try {
    outcome.status = runner::run_blocks(cases, run);
  } catch (const std::exception& e) {
    // After a second interrupt the go-runtime program is killed under the repetition waiting
    // for it, which then fails; whichever of this thread and the watcher writes the sidecar
    // last, it must say interrupted.
    if (g_stopping_now.load()) {
      outcome.status = RunStatus::interrupted;
    } else {
      outcome.status = RunStatus::failed;
      outcome.error = e.what();
    }
  }
  outcome.results = std::move(run.results);
  outcome.rows = out.csv().rows();
  out.sidecar().record("interleaving", runner::interleaving_record(run));
  out.sidecar().record("replacements", runner::replacements_record(run));
  out.sidecar().record("speed_probe", probe.summary());
  // The timeline in a file of its own beside the CSV (never over an existing one; a full disk
  // leaves the sidecar saying why it is missing, the run's status unchanged).
  const std::string timeline_path = machine_timeline_path_for(r.out_path);
  const std::string timeline_error = write_new_file(timeline_path, timeline.json(probe.points()).dump() + "\n");
  out.sidecar().record("machine_timeline",
                       timeline.sidecar_json(std::filesystem::path(timeline_path).filename().string(), timeline_error));
  for (const MachineTimeline::Episode& e : timeline.episodes()) outcome.machine.push_back(e);
  if (!run.servers.empty()) {
    nlohmann::json builds = nlohmann::json::object();
    for (const auto& [build, server] : run.servers) builds[build] = server->describe();
    out.sidecar().record("ab", {{"builds", builds}, {"rule", kAbRule}});
  }
  outcome.sidecar_error = out.sidecar().finish(status_word(outcome.status), outcome.error, outcome.rows, events);
  if (!outcome.sidecar_error.empty() && outcome.status == RunStatus::complete) {
    outcome.status = RunStatus::failed;  // the rows are whole, but nothing on disk says the run completed
    outcome.error = std::exchange(outcome.sidecar_error, "");
  }
  return outcome;
}

}  // namespace schedlab
