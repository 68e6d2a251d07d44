#include "registry.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "entry_params.hpp"

namespace schedlab {

// Every component folder's entry function, as the build found them (harness/CMakeLists.txt
// writes component_entries.inc: one SCHEDLAB_SCHEDULER_FOLDER(x) or SCHEDLAB_WORKLOAD_FOLDER(x)
// line per schedulers/x/entry.cpp or workloads/x/entry.cpp).
#define SCHEDLAB_SCHEDULER_FOLDER(folder) std::vector<SchedulerEntry> scheduler_entries_##folder();
#define SCHEDLAB_WORKLOAD_FOLDER(folder) std::vector<WorkloadEntry> workload_entries_##folder();
#include "component_entries.inc"
#undef SCHEDLAB_SCHEDULER_FOLDER
#undef SCHEDLAB_WORKLOAD_FOLDER

namespace {

// A label only, for the A/A control that measures a run's noise floor: the same configuration
// twice (--replica a,b) in the same blocks. Every scheduler but the elision takes it; it changes
// nothing.
ParamSpec replica_param() {
  ParamSpec p = choice("replica", "a", {"a", "b"},
                       "a label: two replicas of one configuration in the same repetitions are the A/A "
                       "control whose time ratio is the run's noise floor");
  p.machine_setup = true;
  return p;
}

// Orders entries by rank; entries of one rank keep the folders' order (alphabetical).
template <class Entry>
void by_rank(std::vector<Entry>& entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.rank < b.rank; });
}

// The harness's own entries, which are no scheduler folder: the elision (no scheduler at all)
// and go-runtime (another program). `workloads` names go-runtime's twins.
std::vector<SchedulerEntry> harness_entries(const std::vector<WorkloadEntry>& workloads) {
  SchedulerEntry elision{kElisionName, "the sequential elision: each workload's own program with every spawn a plain call "
                         "and no scheduler at all; T_S, the baseline of the speedup and work_overhead columns (presets "
                         "measure it in every block; add --scheduler elision to a run for them); one thread",
                         {pin_param(kPinByDefault)}, {}, /*single_threaded=*/true, SchedulerKind::elision};
  elision.rank = 70;
  elision.counters = CounterMask{};  // no scheduler, nothing to count
  elision.cannot_wait_channels =
      "the sequential elision runs every task as a plain call, to its end, so a task waiting for another's send "
      "would wait for ever (a program of tasks that hand values to each other has no sequential elision)";
  // The real thing: Go's own runtime running the same programs (workloads/go), GOMAXPROCS =
  // --threads, for the workloads that declare a Go twin.
  std::string twins;
  for (const WorkloadEntry& w : workloads) {
    if (w.go_twin) twins += (twins.empty() ? "" : ", ") + w.name;
  }
  SchedulerEntry go{"go-runtime", "Go's scheduler itself: the Go twins of " + twins + " (workloads/go), GOMAXPROCS = --threads",
                    {latency_param(false)}, {}, /*single_threaded=*/false, SchedulerKind::external, /*peer=*/true};
  go.rank = 100;
  // Go's runtime tells the program its threads (the threadcreate profile), not its queues.
  go.counters = counter_mask({Counter::threads_created});
  return {elision, go};
}

std::vector<WorkloadEntry> build_workloads() {
  std::vector<WorkloadEntry> r;
  auto add = [&r](std::vector<WorkloadEntry> entries) {
    for (WorkloadEntry& e : entries) r.push_back(std::move(e));
  };
#define SCHEDLAB_SCHEDULER_FOLDER(folder)
#define SCHEDLAB_WORKLOAD_FOLDER(folder) add(workload_entries_##folder());
#include "component_entries.inc"
#undef SCHEDLAB_SCHEDULER_FOLDER
#undef SCHEDLAB_WORKLOAD_FOLDER
  by_rank(r);
  return r;
}

struct Schedulers {
  std::vector<SchedulerEntry> present;
  std::vector<SchedulerEntry> missing;  // SchedulerEntry::missing set: not in this build
};

Schedulers build_schedulers() {
  std::vector<SchedulerEntry> all = harness_entries(workload_registry());
  auto add = [&all](std::vector<SchedulerEntry> entries) {
    for (SchedulerEntry& e : entries) all.push_back(std::move(e));
  };
#define SCHEDLAB_SCHEDULER_FOLDER(folder) add(scheduler_entries_##folder());
#define SCHEDLAB_WORKLOAD_FOLDER(folder)
#include "component_entries.inc"
#undef SCHEDLAB_SCHEDULER_FOLDER
#undef SCHEDLAB_WORKLOAD_FOLDER
  by_rank(all);
  Schedulers s;
  for (SchedulerEntry& e : all) {
    // The elision takes no replica: the A/A control pairs two replicas of one scheduler, and the
    // elision a preset adds to every block (presets.cpp) is measured once beside them.
    if (!e.elision()) e.params.push_back(replica_param());
    (e.missing.empty() ? s.present : s.missing).push_back(std::move(e));
  }
  return s;
}

const Schedulers& schedulers() {
  static const Schedulers s = build_schedulers();
  return s;
}

template <class Entry>
const Entry& find_in(const std::vector<Entry>& entries, const std::string& name, const char* what) {
  for (const Entry& e : entries) {
    if (e.name == name) return e;
  }
  std::string names;
  for (const Entry& e : entries) names += (names.empty() ? "" : ", ") + e.name;
  throw ParamError(std::string("unknown ") + what + " '" + name + "': choose one of " + names);
}

}  // namespace

const std::vector<SchedulerEntry>& scheduler_registry() { return schedulers().present; }

const std::vector<WorkloadEntry>& workload_registry() {
  static const std::vector<WorkloadEntry> r = build_workloads();
  return r;
}

std::vector<std::string> peer_names() {
  std::vector<std::string> out;
  for (const SchedulerEntry& e : scheduler_registry()) {
    if (e.peer) out.push_back(e.name);
  }
  return out;
}

std::optional<std::string> missing_from_this_build(const std::string& name) {
  for (const SchedulerEntry& e : schedulers().missing) {
    if (e.name == name) return e.missing;
  }
  return std::nullopt;
}

namespace {
// The entry's reason for refusing what w's tasks wait on, or nullptr.
const std::string* refusal(const SchedulerEntry& s, const WorkloadEntry& w) {
  const std::string* why = w.waits == TaskWaits::channels ? &s.cannot_wait_channels
                           : w.waits == TaskWaits::locks  ? &s.cannot_wait_locks
                                                          : nullptr;
  return why != nullptr && !why->empty() ? why : nullptr;
}
}  // namespace

std::optional<std::string> cannot_run(const SchedulerEntry& s, const WorkloadEntry& w) {
  const std::string* why = refusal(s, w);
  if (why == nullptr) return std::nullopt;
  std::string others;
  for (const SchedulerEntry& e : scheduler_registry()) {
    if (e.name != s.name && !e.example && refusal(e, w) == nullptr) others += (others.empty() ? "" : ", ") + e.name;
  }
  return "scheduler " + s.name + " cannot run workload " + w.name + ": " + *why + "; choose another scheduler (" +
         others + ")";
}

const SchedulerEntry& find_scheduler(const std::string& name) {
  if (const std::optional<std::string> why = missing_from_this_build(name)) {
    throw ParamError("scheduler '" + name + "' is not available: " + *why +
                     "; rebuild with it on (the release build has it), or choose another");
  }
  return find_in(scheduler_registry(), name, "scheduler");
}

const WorkloadEntry& find_workload(const std::string& name) {
  return find_in(workload_registry(), name, "workload");
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& name, unsigned threads,
                                          const ParamValues& params) {
  const SchedulerEntry& e = find_scheduler(name);
  if (e.external()) throw ParamError("scheduler " + name + " is an external program; only `schedlab run` can run it");
  if (e.elision()) throw ParamError("scheduler " + name + " is the sequential elision, not a scheduler; only `schedlab run` can run it");
  return e.make(threads, resolve_params(e.params, params, "scheduler " + name));
}

std::vector<ParamSpec> all_param_specs() {
  std::vector<ParamSpec> out;
  std::set<std::string> seen;
  auto add = [&](const std::vector<ParamSpec>& specs) {
    for (const ParamSpec& s : specs) {
      if (seen.insert(s.name).second) out.push_back(s);
    }
  };
  for (const auto& w : workload_registry()) add(w.params);
  for (const auto& s : scheduler_registry()) add(s.params);
  return out;
}

std::string param_meaning(const std::string& name, bool with_accepted) {
  std::vector<std::pair<std::string, std::string>> groups;  // help [accepted], owners
  const auto collect = [&](const std::string& owner, const std::vector<ParamSpec>& specs) {
    for (const ParamSpec& p : specs) {
      if (p.name != name) continue;
      const std::string text = with_accepted ? p.help + " [" + p.accepted() + "]" : p.help;
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == text; });
      if (it == groups.end()) {
        groups.emplace_back(text, owner);
      } else {
        it->second += ", " + owner;
      }
    }
  };
  for (const auto& w : workload_registry()) collect(w.name, w.params);
  for (const auto& s : scheduler_registry()) collect(s.name, s.params);
  if (groups.size() == 1) return groups.front().first;
  std::string text;
  for (const auto& [help, owners] : groups) text += (text.empty() ? "" : "; ") + owners + ": " + help;
  return text;
}

}  // namespace schedlab
