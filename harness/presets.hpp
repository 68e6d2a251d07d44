// presets.hpp: named benchmark presets, all in one file (harness/presets.json).
//
// A preset is a list of runs (workload x parameters, with the preset's schedulers and thread
// counts unless a run overrides them, or adds schedulers with "add_schedulers") plus
// repetitions. The preset's "params" are every run's starting parameters (the presets that judge
// the claims pin their workers there: README, Pinning); a run's "params" replace the same keys.
// A run's "counters" ("sim", "model") adds the simulated or modelled back end to
// its cases. `schedlab run --preset NAME` and the CMake
// workflow presets bench-NAME run them. A typo in the file is refused with the preset, the run
// and the key or value at fault.
#pragma once

#include <string>
#include <vector>

#include "plan.hpp"

namespace schedlab {

struct PresetInfo {
  std::string name;
  std::string description;
};

// The file compiled in as the default (the source tree's harness/presets.json).
std::string default_presets_path();

// Loads `name` from `path` into a request (parts, reps, warmup, preset). Throws ParamError.
RunRequest load_preset(const std::string& path, const std::string& name);

// Every preset in `path`, with its description. Throws ParamError.
std::vector<PresetInfo> list_presets(const std::string& path);

}  // namespace schedlab
