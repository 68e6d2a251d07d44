// presets.hpp: named benchmark presets, all in one file (harness/presets.json).
//
// A preset is a list of runs (workload x parameters, with the preset's schedulers and thread
// counts unless a run overrides them, or adds schedulers with "add_schedulers") plus
// repetitions. The preset's "params" are every run's starting parameters (the presets that judge
// the claims pin their workers there: docs/schedulers.md, Pinning); a run's "params" replace the
// same keys.
// A run's "counters" ("sim", "model") adds the simulated or modelled back end to
// its cases. `schedlab run --preset NAME` and the CMake
// workflow presets bench-NAME run them. A typo in the file is refused with the preset, the run
// and the key or value at fault.
//
// A preset's "recorded" is the one home of how long it takes: its last measured wall time, on a
// named machine and date ({"wall_s": 882, "machine": "...", "date": "2026-11-28", "note": "..."}),
// or, for a preset never run whole, its authors' "estimate" in words. Prose points at the preset
// table (`schedlab list --markdown presets`) instead of stating times, which went stale whenever
// a preset or the machine changed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan.hpp"

namespace schedlab {

// What a preset's "recorded" says; wall_s is 0 for an estimate.
struct PresetRecord {
  unsigned wall_s = 0;
  std::string machine;
  std::string date;  // YYYY-MM-DD
  std::string estimate;
  std::string note;
};

struct PresetInfo {
  std::string name;
  std::string description;
  unsigned reps = 0;          // 0: the file leaves it to the default
  std::string threads;        // as the file writes it ("[1, 2]", "auto")
  std::optional<PresetRecord> recorded;
};

// "14 min 42 s on MACHINE (DATE; NOTE)", or "not measured; the authors' estimate: ...", for the
// preset table and the dry run.
std::string describe_record(const PresetRecord& r);

// The file compiled in as the default (the source tree's harness/presets.json).
std::string default_presets_path();

// Loads `name` from `path` into a request (parts, reps, warmup, preset). Throws ParamError.
RunRequest load_preset(const std::string& path, const std::string& name);

// Every preset in `path`, with its description, repetitions and recorded time. Throws ParamError
// (a malformed "recorded" included).
std::vector<PresetInfo> list_presets(const std::string& path);

}  // namespace schedlab
