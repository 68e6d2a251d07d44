#include "plan.hpp"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>
#include <stdexcept>

#include "counters/cache_geometry.hpp"
#include "counters/hw_counters.hpp"
#include "counters/sim.hpp"
#include "go_reference.hpp"
#include "metadata.hpp"

namespace schedlab {
namespace {

// Every combination of the values given for `specs` (defaults for those not given).
std::vector<ParamValues> combinations(const std::vector<ParamSpec>& specs,
                                      const std::map<std::string, std::vector<std::string>>& given,
                                      const std::string& owner) {
  std::vector<ParamValues> out{ParamValues{}};
  for (const ParamSpec& s : specs) {
    auto it = given.find(s.name);
    if (it == given.end()) continue;
    std::vector<ParamValues> next;
    for (const ParamValues& partial : out) {
      for (const std::string& v : it->second) {
        ParamValues p = partial;
        p[s.name] = v;
        next.push_back(std::move(p));
      }
    }
    out = std::move(next);
  }
  for (ParamValues& p : out) p = resolve_params(specs, p, owner);
  return out;
}

// Only the values this spec list declares.
std::map<std::string, std::vector<std::string>> restrict_to(
    const std::vector<ParamSpec>& specs, const std::map<std::string, std::vector<std::string>>& all) {
  std::map<std::string, std::vector<std::string>> out;
  for (const ParamSpec& s : specs) {
    auto it = all.find(s.name);
    if (it != all.end()) out[s.name] = it->second;
  }
  return out;
}

// go-runtime rows need the Go toolchain and a Go twin of the workload; without either they are
// skipped, with one message per reason (a machine without Go still runs everything else).
bool external_runnable(const SchedulerEntry& s, const WorkloadEntry& w) {
  static std::set<std::string> said;
  auto skip = [&](const std::string& why) {
    if (said.insert(why).second) std::fprintf(stderr, "schedlab: skipping %s rows: %s\n", s.name.c_str(), why.c_str());
    return false;
  };
  if (const auto why = go_reference_unavailable()) return skip(*why);
  if (!go_supports_workload(w.name)) return skip("no Go twin of workload " + w.name);
  return true;
}

// A simulated case runs schedlab itself under Valgrind: without Valgrind, or for a scheduler
// that is another program, it is skipped with one message per reason, or with
// --require-counters the request is refused.
bool simulation_runnable(const SchedulerEntry& s, bool required) {
  static std::set<std::string> said;
  auto skip = [&](const std::string& why) {
    if (said.insert(why).second) std::fprintf(stderr, "schedlab: skipping simulated rows: %s\n", why.c_str());
    return false;
  };
  if (const auto why = simulator_unavailable()) {
    if (required) {
      throw ParamError("counter sim is unavailable on this machine (" + *why +
                       "); drop --require-counters or choose others with --counters (see `schedlab counters`)");
    }
    return skip(*why);
  }
  if (s.external()) return skip(s.name + " runs another program, which the simulator does not measure");
  return true;
}

void check_threads(const RunPart& r) {
  if (r.threads.empty()) throw ParamError("no thread count given; use --threads N[,N...]");
  for (unsigned t : r.threads) {
    if (t < 1 || t > kMaxThreads) {
      throw ParamError("--threads " + std::to_string(t) + ": out of range; use 1.." +
                       std::to_string(kMaxThreads));
    }
  }
}

// A parameter must mean something to at least one selected scheduler or workload.
void check_params(const RunPart& r, const std::vector<const SchedulerEntry*>& scheds,
                  const std::vector<const WorkloadEntry*>& works) {
  for (const auto& [name, values] : r.params) {
    bool used = false;
    for (auto* s : scheds)
      for (const auto& p : s->params) used = used || p.name == name;
    for (auto* w : works)
      for (const auto& p : w->params) used = used || p.name == name;
    if (!used) {
      throw ParamError("--" + name + " does not apply to the selected schedulers or workloads; see `schedlab list`");
    }
    if (values.empty()) throw ParamError("--" + name + " has no value");
  }
}

// serial runs on one thread whatever --threads says; said once when no thread count of 1 was
// asked for (its rows say threads=1).
void note_single_threaded(const SchedulerEntry& s, const RunPart& r) {
  static std::set<std::string> said;
  if (std::find(r.threads.begin(), r.threads.end(), 1u) != r.threads.end() || !said.insert(s.name).second) return;
  std::fprintf(stderr, "schedlab: note: %s runs on one thread whatever --threads says; its rows say threads=1\n",
               s.name.c_str());
}

// `from_preset`: the part is a preset's, whose author chose its thread counts for its other
// schedulers (and the elision it adds to every block): no note about single-threaded ones.
std::vector<Case> plan_part(const RunPart& r, unsigned index, const CounterSelection& selected, bool require_counters,
                            bool from_preset) {
  if (r.schedulers.empty()) throw ParamError("no scheduler given; use --scheduler NAME[,NAME...]");
  if (r.workloads.empty()) throw ParamError("no workload given; use --workload NAME[,NAME...]");
  check_threads(r);
  std::vector<const SchedulerEntry*> scheds;
  for (const auto& name : r.schedulers) scheds.push_back(&find_scheduler(name));
  std::vector<const WorkloadEntry*> works;
  for (const auto& name : r.workloads) works.push_back(&find_workload(name));
  check_params(r, scheds, works);

  std::vector<Case> cases;
  for (const WorkloadEntry* w : works) {
    for (ParamValues wp : combinations(w->params, restrict_to(w->params, r.params), "workload " + w->name)) {
      if (w->settle) w->settle(wp);
      // Build once to validate the combination (e.g. n in range for this shape).
      try {
        (void)w->make(wp);
      } catch (const std::invalid_argument& e) {
        throw ParamError(e.what());
      }
      const bool simulated = selected.simulated || r.simulated;
      const bool modelled = selected.modelled || r.modelled;
      std::vector<unsigned> threads;  // each count once, in the order given ("auto,1" has 1 twice)
      for (unsigned t : r.threads) {
        if (std::find(threads.begin(), threads.end(), t) == threads.end()) threads.push_back(t);
      }
      for (unsigned t : threads) {
        for (const SchedulerEntry* s : scheds) {
          if (s->single_threaded && t != threads.front()) continue;
          if (s->single_threaded && !from_preset) note_single_threaded(*s, r);
          if (simulated && !simulation_runnable(*s, require_counters)) continue;
          if (s->external() && !external_runnable(*s, *w)) continue;
          if (const std::optional<std::string> why = cannot_run(*s, *w)) throw ParamError(*why);
          for (const ParamValues& sp : combinations(s->params, restrict_to(s->params, r.params), "scheduler " + s->name)) {
            const unsigned threads = s->single_threaded ? 1u : t;
            if (s->validate) s->validate(threads, sp);  // what only a build would find, found now
            cases.push_back(Case{s, sp, w, wp, threads, simulated, modelled, index});
          }
        }
      }
    }
  }
  return cases;
}

// The cases whose label --filter matches; a filter that is no regular expression, or that
// matches none of them, is refused.
std::vector<Case> filtered(std::vector<Case> cases, const std::string& filter) {
  if (filter.empty()) return cases;
  std::regex pattern;
  try {
    pattern = std::regex(filter, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw ParamError("--filter '" + filter + "' is not a regular expression (" + e.what() +
                     "); use ECMAScript syntax, e.g. 'steal-half.*threads=2'");
  }
  const std::size_t all = cases.size();
  std::erase_if(cases, [&pattern](const Case& c) { return !std::regex_search(c.label(), pattern); });
  if (cases.empty()) {
    throw ParamError("--filter '" + filter + "' matches none of the " + std::to_string(all) +
                     " cases; see their names with --dry-run (without --filter)");
  }
  return cases;
}

// An A/B run (--against): each case three times, measured by this binary, by this binary again
// (the A/A control) and by the other, in that order, so that they share a block. Cases the
// builds' servers cannot measure are left out, with one message per reason: another program
// (go-runtime: the same Go program whichever build runs it) and simulated or modelled ones (an
// A/B run compares time; the servers count no caches).
std::vector<Case> ab_cases(std::vector<Case> cases) {
  std::vector<Case> out;
  std::set<std::string> said;
  auto skip = [&](const std::string& why) {
    if (said.insert(why).second) std::fprintf(stderr, "schedlab: --against: leaving out %s\n", why.c_str());
  };
  for (Case& c : cases) {
    if (c.scheduler->external()) {
      skip(c.scheduler->name + " cases (another program, the same whichever build runs it)");
      continue;
    }
    if (c.simulated || c.modelled) {
      skip("simulated and modelled cases (an A/B run compares time; its servers count no caches)");
      continue;
    }
    for (const char* build : {kBuildA, kBuildA2, kBuildB}) {
      Case copy = c;
      copy.build = build;
      out.push_back(std::move(copy));
    }
  }
  if (out.empty()) throw ParamError("--against: none of the selected cases can be measured by two builds (see above); select in-process schedulers");
  return out;
}

// --sim-l1 and --sim-ll mean something only to simulated or modelled cases.
void check_geometry_options(const RunRequest& r) {
  for (const auto& [option, value] : {std::pair{"--sim-l1", &r.sim_l1}, std::pair{"--sim-ll", &r.sim_ll}}) {
    if (!value->empty()) {
      throw ParamError(std::string(option) + " applies to simulated or modelled cases; add --counters sim or model, or drop " + option);
    }
  }
}

}  // namespace

std::string Case::label() const {
  return variant() + " " + workload->name + "(" + describe(workload->params, workload_params) +
         ") threads=" + std::to_string(threads) + (simulated ? " [sim]" : "");
}

std::string Case::param(const std::string& name) const {
  if (auto w = workload_params.find(name); w != workload_params.end()) return w->second;
  if (auto s = scheduler_params.find(name); s != scheduler_params.end()) return s->second;
  return "";
}

std::string Case::variant() const {
  std::string label = scheduler->name;
  for (const ParamSpec& p : scheduler->params) {
    const std::string& v = scheduler_params.at(p.name);
    if (v != p.canonical(p.default_value)) label += " " + p.name + "=" + v;
  }
  if (!build.empty()) label += " build=" + build;
  return label;
}

std::string Case::design() const {
  std::string label = scheduler->name;
  for (const ParamSpec& p : scheduler->params) {
    const std::string& v = scheduler_params.at(p.name);
    if (!p.machine_setup && v != p.canonical(p.default_value)) label += " " + p.name + "=" + v;
  }
  if (!build.empty()) label += " build=" + build;
  return label;
}

bool same_machine_setup(const Case& a, const Case& b) {
  const auto agree = [](const Case& x, const Case& y) {
    for (const ParamSpec& p : x.scheduler->params) {
      if (!p.machine_setup) continue;
      const auto other = y.scheduler_params.find(p.name);
      const std::string theirs = other != y.scheduler_params.end() ? other->second : p.canonical(p.default_value);
      if (x.scheduler_params.at(p.name) != theirs) return false;
    }
    return true;
  };
  return agree(a, b) && agree(b, a);
}

bool Case::records_latency() const {
  if (simulated) return false;
  return param("latency") == "on" || (workload->measures_requests && workload->measures_requests(workload_params));
}

nlohmann::json case_json(const Case& c) {
  return {{"scheduler", c.scheduler->name},
          {"scheduler_params", c.scheduler_params},
          {"workload", c.workload->name},
          {"workload_params", c.workload_params},
          {"threads", c.threads}};
}

Case case_from_json(const nlohmann::json& j) {
  const SchedulerEntry& s = find_scheduler(j.at("scheduler").get<std::string>());
  const WorkloadEntry& w = find_workload(j.at("workload").get<std::string>());
  Case c;
  c.scheduler = &s;
  c.workload = &w;
  c.scheduler_params = resolve_params(s.params, j.at("scheduler_params").get<ParamValues>(), "scheduler " + s.name);
  c.workload_params = resolve_params(w.params, j.at("workload_params").get<ParamValues>(), "workload " + w.name);
  if (w.settle) w.settle(c.workload_params);
  c.threads = j.at("threads").get<unsigned>();
  return c;
}

std::vector<unsigned> auto_thread_counts() {
  const unsigned cpus = std::min(usable_cpus(), kMaxThreads);
  std::vector<unsigned> out;
  for (unsigned t = 1; t < cpus; t *= 2) out.push_back(t);
  out.push_back(cpus);
  return out;
}

std::vector<unsigned> thread_counts(const std::string& item) {
  if (item == "auto") return auto_thread_counts();
  if (item == "all") return {std::min(usable_cpus(), kMaxThreads)};
  const ParamSpec spec{"threads", ParamKind::integer, "1", "", 1, kMaxThreads, {}};
  try {
    return {static_cast<unsigned>(std::stoul(spec.canonical(item)))};
  } catch (const ParamError& e) {
    throw ParamError(std::string(e.what()) +
                     ", or auto (1, 2, 4, ... up to the CPUs this process may use), or all (those CPUs' count)");
  }
}

std::vector<Case> plan(const RunRequest& r) {
  if (r.reps < 1 || r.reps > 100000) throw ParamError("--reps " + std::to_string(r.reps) + ": out of range; use 1..100000");
  if (r.warmup > 1000) throw ParamError("--warmup " + std::to_string(r.warmup) + ": out of range; use 0..1000");
  if (r.parts.empty()) throw ParamError("nothing to run; give --scheduler and --workload, or --preset");
  const CounterSelection selected = parse_counters(r.counters);
  std::vector<Case> cases;
  for (std::size_t i = 0; i < r.parts.size(); ++i) {
    std::vector<Case> more = plan_part(r.parts[i], static_cast<unsigned>(i), selected, r.require_counters, !r.preset.empty());
    cases.insert(cases.end(), more.begin(), more.end());
  }
  if (cases.empty()) throw ParamError("nothing to run: every selected case was skipped (the messages above say why)");
  cases = filtered(std::move(cases), r.filter);
  if (!r.against.empty()) cases = ab_cases(std::move(cases));
  // Resolved now, so that a bad --sim-l1 or --sim-ll is refused before anything runs, and a
  // machine that describes no usable cache is said to get the assumption before it does.
  if (const std::optional<SimGeometry> g = cache_geometry_for(r, cases)) {
    for (const std::string* from : {&g->d1_from, &g->ll_from}) {
      if (from->rfind("assumed", 0) == 0) std::fprintf(stderr, "schedlab: note: simulated and modelled caches: %s\n", from->c_str());
    }
  } else {
    check_geometry_options(r);
  }
  return cases;
}

std::optional<SimGeometry> cache_geometry_for(const RunRequest& r, const std::vector<Case>& cases) {
  const bool needed = std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.simulated || c.modelled; });
  if (!needed) return std::nullopt;
  return resolve_sim_geometry(r.sim_l1, r.sim_ll);
}

}  // namespace schedlab
