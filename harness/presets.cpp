#include "presets.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "params.hpp"
#include "registry.hpp"

namespace schedlab {
namespace {

using nlohmann::json;

json read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw ParamError("presets file " + path + " is a directory; pass --presets-file FILE.json");
  }
  std::ifstream in(path);
  if (!in) throw ParamError("cannot read presets file " + path + "; pass --presets-file PATH");
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw ParamError("presets file " + path + " is not valid JSON (" + e.what() + "); fix the file");
  } catch (const std::ios_base::failure& e) {  // a read error (a FIFO, a device, an I/O error)
    throw ParamError("cannot read presets file " + path + " (" + e.what() + "); pass --presets-file FILE.json");
  }
}

void only_keys(const json& obj, const std::set<std::string>& allowed, const std::string& where) {
  if (!obj.is_object()) throw ParamError(where + " must be a JSON object");
  for (const auto& [key, _] : obj.items()) {
    if (allowed.count(key) == 0) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw ParamError(where + ": unknown key '" + key + "'; allowed: " + list);
    }
  }
}

std::string scalar_text(const json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return v.dump();
  throw ParamError(where + ": expected a string or a number, got " + v.dump());
}

std::vector<std::string> text_list(const json& v, const std::string& where) {
  std::vector<std::string> out;
  if (v.is_array()) {
    for (const auto& item : v) out.push_back(scalar_text(item, where));
  } else {
    out.push_back(scalar_text(v, where));
  }
  if (out.empty()) throw ParamError(where + ": empty list");
  return out;
}

// "auto" (the machine's own sweep, plan.hpp), "all" (its CPUs' count), or a list of counts
// (which may include either).
std::vector<unsigned> thread_list(const json& v, const std::string& where) {
  std::vector<unsigned> out;
  for (const std::string& item : text_list(v, where)) {
    try {
      for (unsigned t : thread_counts(item)) out.push_back(t);
    } catch (const ParamError& e) {
      throw ParamError(where + ": " + e.what());
    }
  }
  return out;
}

unsigned count(const json& v, const std::string& where) {
  if (!v.is_number_unsigned()) throw ParamError(where + ": expected a whole number, got " + v.dump());
  return v.get<unsigned>();
}

// A preset names every backend schedlab has; a build without some of them (the TSan build, or
// one without oneTBB) runs the rest and says once per backend and preset what it skipped (`said`:
// the backends named so far while loading this preset).
void skip_missing_backends(std::vector<std::string>& schedulers, const std::string& where,
                           std::set<std::string>& said) {
  std::erase_if(schedulers, [&](const std::string& name) {
    const std::optional<std::string> why = missing_from_this_build(name);
    if (why && said.insert(name).second) {
      std::fprintf(stderr, "schedlab: note: %s: skipping %s: %s\n", where.c_str(), name.c_str(), why->c_str());
    }
    return why.has_value();
  });
}

// A run's "counters": the back ends it adds to --counters for its cases, "sim" and/or "model".
// The events themselves stay with --counters (one selection for the whole run).
void read_back_ends(const json& v, const std::string& where, RunPart& part) {
  for (const std::string& item : text_list(v, where)) {
    if (item == "sim") {
      part.simulated = true;
    } else if (item == "model") {
      part.modelled = true;
    } else {
      throw ParamError(where + ": '" + item + "' cannot be set per run; use sim or model (events come from --counters)");
    }
  }
}

// A "params" object (the preset's or a run's): each key's value list, replacing what `into`
// held for that key.
void read_params(const json& v, const std::string& where, std::map<std::string, std::vector<std::string>>& into) {
  if (!v.is_object()) throw ParamError(where + ": 'params' must be an object");
  for (const auto& [param, values] : v.items()) into[param] = text_list(values, where + ": params." + param);
}

bool is_date(const std::string& d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (d[i] < '0' || d[i] > '9') return false;
  }
  return true;
}

std::string required_text(const json& obj, const std::string& key, const std::string& where) {
  if (!obj.contains(key) || !obj[key].is_string() || obj[key].get<std::string>().empty()) {
    throw ParamError(where + ": needs '" + key + "', a non-empty string");
  }
  return obj[key].get<std::string>();
}

// A preset's "recorded": a measurement (wall_s, machine, date) or, for a preset never run whole,
// an estimate; not both, so that the table never passes an estimate off as measured.
PresetRecord read_record(const json& v, const std::string& at) {
  const std::string where = at + ": recorded";
  only_keys(v, {"wall_s", "machine", "date", "estimate", "note"}, where);
  PresetRecord r;
  if (v.contains("note")) r.note = required_text(v, "note", where);
  if (v.contains("estimate")) {
    if (v.contains("wall_s") || v.contains("date")) {
      throw ParamError(where + ": an estimate has no wall_s or date; record a measurement or an estimate, not both");
    }
    r.estimate = required_text(v, "estimate", where);
    if (v.contains("machine")) r.machine = required_text(v, "machine", where);
    return r;
  }
  if (!v.contains("wall_s") || !v["wall_s"].is_number_unsigned() || v["wall_s"].get<unsigned long long>() == 0 ||
      v["wall_s"].get<unsigned long long>() > 10'000'000) {
    throw ParamError(where + ": needs 'wall_s', the measured wall time in whole seconds (1..10000000), or an 'estimate'");
  }
  r.wall_s = v["wall_s"].get<unsigned>();
  r.machine = required_text(v, "machine", where);
  r.date = required_text(v, "date", where);
  if (!is_date(r.date)) throw ParamError(where + ": date '" + r.date + "' is not YYYY-MM-DD");
  return r;
}

std::string duration_text(unsigned s) {
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string(s / 60) + " min" + (s % 60 ? " " + std::to_string(s % 60) + " s" : "");
  return std::to_string(s / 3600) + " h" + (s % 3600 / 60 ? " " + std::to_string(s % 3600 / 60) + " min" : "");
}

}  // namespace

std::string describe_record(const PresetRecord& r) {
  std::string out;
  if (!r.estimate.empty()) {
    out = "not measured; the authors' estimate: " + r.estimate + (r.machine.empty() ? "" : " (" + r.machine + ")");
  } else {
    out = duration_text(r.wall_s) + " on " + r.machine + " (" + r.date + ")";
  }
  if (!r.note.empty()) out += "; " + r.note;
  return out;
}

std::string default_presets_path() { return SCHEDLAB_PRESETS_FILE; }

std::vector<PresetInfo> list_presets(const std::string& path) {
  const json all = read_file(path);
  if (!all.is_object()) throw ParamError("presets file " + path + " must hold a JSON object of presets");
  std::vector<PresetInfo> out;
  for (const auto& [name, p] : all.items()) {
    PresetInfo info{name, p.is_object() && p.contains("description") ? p["description"].get<std::string>() : ""};
    if (p.is_object()) {
      if (p.contains("reps")) info.reps = count(p["reps"], "preset '" + name + "': reps");
      if (p.contains("threads")) {
        for (const std::string& t : text_list(p["threads"], "preset '" + name + "': threads")) {
          info.threads += (info.threads.empty() ? "" : ", ") + t;
        }
      }
      if (p.contains("recorded")) info.recorded = read_record(p["recorded"], "preset '" + name + "'");
    }
    out.push_back(std::move(info));
  }
  return out;
}

RunRequest load_preset(const std::string& path, const std::string& name) {
  const json all = read_file(path);
  if (!all.is_object() || !all.contains(name)) {
    std::string names;
    if (all.is_object()) {
      for (const auto& [n, _] : all.items()) names += (names.empty() ? "" : ", ") + n;
    }
    throw ParamError("unknown preset '" + name + "' in " + path + ": choose one of " + names);
  }
  const json& p = all[name];
  const std::string where = "preset '" + name + "'";
  only_keys(p, {"description", "schedulers", "threads", "reps", "warmup", "replace_flagged", "params", "runs", "recorded"},
            where);
  if (p.contains("recorded")) (void)read_record(p["recorded"], where);
  if (!p.contains("runs") || !p["runs"].is_array() || p["runs"].empty()) {
    throw ParamError(where + ": needs a non-empty list 'runs'");
  }
  RunRequest r;
  r.preset = name;
  if (p.contains("reps")) r.reps = count(p["reps"], where + ": reps");
  if (p.contains("warmup")) r.warmup = count(p["warmup"], where + ": warmup");
  if (p.contains("replace_flagged")) r.replace_flagged = count(p["replace_flagged"], where + ": replace_flagged");
  // The preset's "params": values every run starts from, for the settings of the machine that
  // the whole preset shares (pinning); a run's own "params" replace the same keys.
  std::map<std::string, std::vector<std::string>> preset_params;
  if (p.contains("params")) read_params(p["params"], where, preset_params);
  std::set<std::string> skipped;
  for (std::size_t i = 0; i < p["runs"].size(); ++i) {
    const json& run = p["runs"][i];
    const std::string at = where + ", run " + std::to_string(i + 1);
    only_keys(run, {"workload", "params", "schedulers", "add_schedulers", "threads", "counters"}, at);
    RunPart part;
    if (!run.contains("workload")) throw ParamError(at + ": needs 'workload'");
    part.workloads = text_list(run["workload"], at + ": workload");
    const json& schedulers = run.contains("schedulers") ? run["schedulers"] : p.value("schedulers", json());
    if (schedulers.is_null()) throw ParamError(at + ": no 'schedulers' here or in the preset");
    part.schedulers = text_list(schedulers, at + ": schedulers");
    // "add_schedulers": this run's schedulers are the list above plus these, so that a run can
    // add a few without restating (and drifting from) the preset's list.
    if (run.contains("add_schedulers")) {
      for (const std::string& name : text_list(run["add_schedulers"], at + ": add_schedulers")) {
        if (std::find(part.schedulers.begin(), part.schedulers.end(), name) != part.schedulers.end()) {
          throw ParamError(at + ": add_schedulers: " + name + " is already one of the run's schedulers; remove it from one list");
        }
        part.schedulers.push_back(name);
      }
    }
    // An example (SchedulerEntry::example: docs/extending.md's worked example) is run by every
    // test and by --scheduler, never by a preset: the presets and their claims measure the
    // designs under study and the runtimes a user would pick.
    for (const std::string& name : part.schedulers) {
      const auto& all = scheduler_registry();
      const auto it = std::find_if(all.begin(), all.end(), [&](const SchedulerEntry& e) { return e.name == name; });
      if (it != all.end() && it->example) {
        throw ParamError(at + ": " + name + " is the worked example of docs/extending.md, which no preset runs; remove it "
                         "from the preset and run it with --scheduler " + name);
      }
    }
    skip_missing_backends(part.schedulers, where, skipped);
    if (part.schedulers.empty()) continue;  // every scheduler of this run is missing from the build
    const json& threads = run.contains("threads") ? run["threads"] : p.value("threads", json(1));
    part.threads = thread_list(threads, at + ": threads");
    if (run.contains("counters")) read_back_ends(run["counters"], at + ": counters", part);
    // Every native block of a preset measures the sequential elision beside its variants, so that
    // each row's speedup and work overhead (row.cpp) have their T_S from the same moment of the
    // machine. Simulated blocks leave it out: their times are Valgrind's and enter no ratio; so
    // do the workloads that have no elision (tasks that wait for each other's sends).
    const bool elidable = std::none_of(part.workloads.begin(), part.workloads.end(), [](const std::string& w) {
      try {
        return cannot_run(find_scheduler(kElisionName), find_workload(w)).has_value();
      } catch (const ParamError&) {
        return false;  // an unknown workload: plan() below names it, with the preset
      }
    });
    if (!part.simulated && elidable &&
        std::find(part.schedulers.begin(), part.schedulers.end(), kElisionName) == part.schedulers.end()) {
      part.schedulers.push_back(kElisionName);
    }
    part.params = preset_params;
    if (run.contains("params")) read_params(run["params"], at, part.params);
    r.parts.push_back(std::move(part));
  }
  // Catch misspelt schedulers, workloads and parameters now, with the preset named.
  try {
    (void)plan(r);
  } catch (const ParamError& e) {
    throw ParamError(where + ": " + e.what());
  }
  return r;
}

}  // namespace schedlab
