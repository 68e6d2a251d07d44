// schedlab: the command-line driver.
//
//   schedlab list                          schedulers, workloads, presets and their parameters
//   schedlab list --json                   every parameter's default, as a sidecar's `parameters`
//   schedlab list --markdown [TABLE]       the same as the Markdown tables docs/ show (TABLE:
//                                          schedulers, workloads or presets; default all three)
//   schedlab run --scheduler a,b --workload w --threads 1,2 --reps 5 [--PARAM v1,v2] [--out F]
//   schedlab run --preset quick            a named preset (harness/presets.json)
//   schedlab run ... --filter REGEX        only the cases whose name matches
//   schedlab run ... --dry-run             the cases, nothing run or written
//   schedlab --version                     version, git commit, build type
//   schedlab counters                      what this machine can count, and why not the rest
//   schedlab columns [--markdown|--json]   the CSV's columns (harness/row.cpp)
//   schedlab run ... --against OTHER       an A/B run: this build and OTHER, paired per block
//   schedlab simulated-repetition ...      (hidden) one repetition under Valgrind, for `--counters
//                                          sim` (harness/sim_subject.hpp); not for people
//   schedlab serve                         (hidden) an A/B run's server (harness/served_subject.hpp)
//
// Exit status: 0 done; 1 a run failed (wrong result, runtime error, out of threads or memory);
// 2 the request was refused (bad name, value or file), nothing ran or was written; 130
// interrupted (completed rows kept). A crash ends the process by its signal, with the sidecar
// marked failed first.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "counters/hw_counters.hpp"
#include "csv.hpp"
#include "diagnostics.hpp"
#include "go_reference.hpp"
#include "latency_file.hpp"
#include "memory_budget.hpp"
#include "metadata.hpp"
#include "presets.hpp"
#include "registry.hpp"
#include "row.hpp"
#include "runner.hpp"
#include "served_subject.hpp"
#include "sidecar.hpp"
#include "speed_probe.hpp"
#include "sim_subject.hpp"
#include "summary.hpp"

namespace schedlab {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitRefused = 2;
constexpr int kExitInterrupted = 130;

// The items of --NAME's comma list; an empty item ("1,,2", "1,") is refused, not dropped.
std::vector<std::string> split_list(const std::string& name, const std::string& text) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t comma = text.find(',', from);
    out.push_back(text.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (out.back().empty()) {
      throw ParamError("--" + name + " " + text + ": an empty item in the list; remove the extra comma");
    }
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

void print_params(std::ostream& out, const std::vector<ParamSpec>& params) {
  for (const ParamSpec& p : params) {
    out << "      --" << p.name << " (default " << p.default_value << "; " << p.accepted() << ")\n"
        << "          " << p.help << "\n";
  }
}

int cmd_list(const std::string& presets_file) {
  std::ostream& out = std::cout;
  out << "Schedulers (--scheduler):\n";
  for (const auto& s : scheduler_registry()) {
    out << "  " << s.name << ": " << s.summary << "\n";
    print_params(out, s.params);
  }
  out << "\nWorkloads (--workload):\n";
  for (const auto& w : workload_registry()) {
    out << "  " << w.name << ": " << w.summary << "\n";
    print_params(out, w.params);
  }
  out << "\nEvery parameter takes a comma-separated list to sweep it, e.g. --n 20,25,30.\n";
  out << "\nPresets (--preset, from " << presets_file << "):\n";
  for (const PresetInfo& p : list_presets(presets_file)) out << "  " << p.name << ": " << p.description << "\n";
  return 0;
}

// A Markdown table cell: a '|' would end the cell, a line break the row.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c == '\n' ? ' ' : c;
    }
  }
  return out;
}

std::string param_cell(const std::vector<ParamSpec>& params) {
  std::string out;
  for (const ParamSpec& p : params) out += (out.empty() ? "" : ", ") + ("`--" + p.name + "` " + p.default_value);
  return out.empty() ? "none" : cell(out);
}

// The tables docs/ shows, generated here so that a page cannot drift from the registry and
// presets.json: tests/cli/docs_tables_test.sh compares each page's copy with this output.
void markdown_schedulers(std::ostream& out) {
  out << "| scheduler | kind | summary | cannot run | parameters (default) |\n|---|---|---|---|---|\n";
  for (const SchedulerEntry& s : scheduler_registry()) {
    std::string kind = s.peer ? "peer" : s.example ? "example" : s.elision() ? "baseline (no scheduler)" : "";
    if (kind.empty()) kind = s.single_threaded ? "baseline (one thread)" : "schedlab's own";
    if (s.external()) kind += ", another program";
    std::string cannot;
    if (!s.cannot_wait_channels.empty()) cannot = "workloads that wait on channels";
    if (!s.cannot_wait_locks.empty()) cannot += (cannot.empty() ? "workloads" : " or") + std::string(" that wait on a mutex");
    out << "| `" << s.name << "` | " << kind << " | " << cell(s.summary) << " | " << (cannot.empty() ? "-" : cannot)
        << " | " << param_cell(s.params) << " |\n";
  }
}

void markdown_workloads(std::ostream& out) {
  out << "| workload | summary | tasks wait on | Go twin | sequential elision | parameters (default) |\n"
      << "|---|---|---|---|---|---|\n";
  const SchedulerEntry& elision = find_scheduler(kElisionName);
  for (const WorkloadEntry& w : workload_registry()) {
    const char* waits = w.waits == TaskWaits::channels ? "joins, channels, a mutex"
                        : w.waits == TaskWaits::locks  ? "joins, a mutex"
                                                       : "joins";
    out << "| `" << w.name << "` | " << cell(w.summary) << " | " << waits << " | " << (w.go_twin ? "yes" : "no")
        << " | " << (cannot_run(elision, w) ? "no" : "yes") << " | " << param_cell(w.params) << " |\n";
  }
}

void markdown_presets(std::ostream& out, const std::string& presets_file) {
  out << "| preset | what it runs | threads | reps | last recorded wall time |\n|---|---|---|---|---|\n";
  for (const PresetInfo& p : list_presets(presets_file)) {
    out << "| `" << p.name << "` | " << cell(p.description) << " | " << cell(p.threads.empty() ? "1" : p.threads)
        << " | " << (p.reps == 0 ? std::string("default") : std::to_string(p.reps)) << " | "
        << (p.recorded ? cell(describe_record(*p.recorded)) : "not recorded") << " |\n";
  }
}

int cmd_list_markdown(const std::string& presets_file, const std::string& table) {
  if (table != "all" && table != "schedulers" && table != "workloads" && table != "presets") {
    throw ParamError("list --markdown " + table + ": unknown table; choose schedulers, workloads or presets");
  }
  std::ostringstream out;  // whole or nothing: a bad presets file must not leave half the tables
  if (table == "all" || table == "schedulers") markdown_schedulers(out);
  if (table == "all") out << "\n";
  if (table == "all" || table == "workloads") markdown_workloads(out);
  if (table == "all") out << "\n";
  if (table == "all" || table == "presets") markdown_presets(out, presets_file);
  std::cout << out.str();
  return 0;
}

int cmd_columns(bool markdown, bool json) {
  if (markdown) {
    std::cout << schema_markdown();
  } else if (json) {
    std::cout << schema_json().dump(2) << "\n";
  } else {
    for (const Column& c : columns()) {
      std::cout << c.name << " [" << c.group << (c.unit.empty() ? "" : ", " + c.unit) << "]: " << c.meaning
                << "\n    empty when: " << c.empty_when << "\n";
    }
  }
  return 0;
}

// The directory part of a path must exist; the file itself must not (never overwritten).
void check_output_path(const std::string& path, const char* option) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  struct stat st {};
  if (!dir.empty() && (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    throw ParamError("output directory " + dir + " does not exist; create it or choose another " + option);
  }
  if (::stat(path.c_str(), &st) == 0) {
    throw ParamError("output file " + path + " already exists; choose another " + option +
                     " (results are never overwritten)");
  }
}

// The CSV and its sidecar must be new; the trace must be new and neither of them.
void check_output_paths(const RunRequest& request) {
  check_output_path(request.out_path, "--out");
  check_output_path(metadata_path_for(request.out_path), "--out");
  check_output_path(machine_timeline_path_for(request.out_path), "--out");
  if (request.trace_path.empty()) return;
  const auto same = [](const std::string& a, const std::string& b) {
    return std::filesystem::weakly_canonical(a) == std::filesystem::weakly_canonical(b);
  };
  if (same(request.trace_path, request.out_path)) {
    throw ParamError("--trace " + request.trace_path + " is the results file (--out); choose another --trace path");
  }
  if (same(request.trace_path, metadata_path_for(request.out_path))) {
    throw ParamError("--trace " + request.trace_path +
                     " is the results file's sidecar; choose another --trace path");
  }
  check_output_path(request.trace_path, "--trace");
}

// The events; a missing simulator is refused by plan(), which knows which cases are simulated.
void require_counters(const HwCounters& events) {
  for (const CounterAvailability& a : events.availability()) {
    if (!a.available) {
      throw ParamError("counter " + a.column + " is unavailable on this machine (" + a.reason +
                       "); drop --require-counters or choose others with --counters (see `schedlab counters`)");
    }
  }
}

// `run --dry-run`: the cases as --filter matches them, what is known of their size, and no
// invented time: schedlab keeps no per-task cost of this machine before it has measured one, so
// the time is said to be unknown; a preset's description and its recorded wall time (on the
// machine that measured it, presets.json's "recorded") are quoted as what they are.
std::string dry_run_text(const RunRequest& request, const std::vector<Case>& cases, const std::string& presets_file) {
  std::ostringstream out;
  std::size_t width = 0;
  for (const Case& c : cases) width = std::max(width, c.label().size());
  std::uint64_t tasks = 0;
  bool tasks_known = true;
  for (const Case& c : cases) {
    const std::optional<std::uint64_t> spawned = c.workload->make(c.workload_params)->expected_tasks();
    out << "  " << std::left << std::setw(static_cast<int>(width)) << c.label() << "  tasks/run "
        << (spawned ? std::to_string(*spawned + 1) : "unknown") << "\n";
    tasks_known = tasks_known && spawned.has_value();
    if (spawned) tasks += (*spawned + 1) * request.reps;
  }
  out << cases.size() << " cases x " << request.reps << " repetitions = " << cases.size() * request.reps
      << " measured runs, plus " << request.warmup << " untimed warm-up run(s) per case";
  out << (tasks_known ? "; " + std::to_string(tasks) + " tasks measured in all\n" : "\n");
  out << "estimated time: unknown before measuring (schedlab keeps no per-task cost of this machine)";
  if (!request.preset.empty()) {
    for (const PresetInfo& p : list_presets(presets_file)) {
      if (p.name != request.preset) continue;
      out << "; preset " << p.name << " says: " << p.description;
      if (p.recorded) out << "; its last recorded time: " << describe_record(*p.recorded);
    }
  }
  out << "\nnothing was run or written (drop --dry-run to run)\n";
  return out.str();
}

int report_outcome(const RunOutcome& outcome, const std::string& out_path) {
  std::cout << summary_table(outcome.results);
  if (!outcome.results.empty()) std::cout << describe_machine(outcome.machine);
  std::cout << "rows: " << outcome.rows << " in " << out_path << " (metadata: " << metadata_path_for(out_path)
            << ")\n";
  int code = kExitFailed;
  switch (outcome.status) {
    case RunStatus::complete:
      code = 0;
      break;
    case RunStatus::interrupted:
      std::fprintf(stderr, "schedlab: interrupted; %zu completed rows kept in %s\n", outcome.rows, out_path.c_str());
      code = kExitInterrupted;
      break;
    case RunStatus::failed:
      std::fprintf(stderr, "schedlab: error: %s\n", outcome.error.c_str());
      break;
  }
  if (!outcome.sidecar_error.empty()) {
    std::fprintf(stderr, "schedlab: also, the sidecar could not be finished: %s\n", outcome.sidecar_error.c_str());
  }
  return code;
}

int cmd_run(RunRequest request, const std::string& out, const std::string& presets_file, bool dry_run) {
  if (dry_run) {
    std::cout << dry_run_text(request, plan(request), presets_file);
    return 0;
  }
  if (out.empty()) {
    ::mkdir("results", 0755);
    request.out_path = "results/" + (request.preset.empty() ? std::string("run") : request.preset) + "-" +
                       compact_timestamp() + "-" + host_name() + ".csv";
  } else {
    request.out_path = out;
  }
  check_output_paths(request);
  const std::vector<Case> cases = plan(request);
  try {
    if (const auto scale = probe_scale_from_env()) {
      std::fprintf(stderr, "schedlab: note: %s is set: CPU %d's speed-probe readings are multiplied by %g from %g s on "
                           "(a test hook; its real speed is not)\n",
                   kProbeScaleEnv, scale->cpu, scale->factor, scale->after_s);
    }
  } catch (const std::invalid_argument& e) {
    throw ParamError(e.what());
  }
  if (std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.records_latency(); })) {
    check_output_path(LatencyFile::path_for(request.out_path), "--out");
  }
  HwCounters events(parse_counters(request.counters).events);
  if (request.require_counters) require_counters(events);
  if (request.memory_budget != 0) set_memory_budget(request.memory_budget);
  install_crash_handlers();
  // An A/B run's servers first: a binary that does not serve is refused before anything is written.
  BuildServers servers;
  if (!request.against.empty()) servers = start_build_servers(request.against, memory_budget().bytes);
  RunOutputs outputs(request, cases, events);
  std::fprintf(stderr, "schedlab: %zu cases x %u repetitions -> %s\n", cases.size(), request.reps,
               request.out_path.c_str());
  return report_outcome(execute(request, cases, outputs, events, std::move(servers)), request.out_path);
}

// What `schedlab run` was given, as text, before it is checked. The defaults are RunRequest's
// and RunPart's (plan.hpp), which --help shows.
struct RunOptions {
  std::string schedulers, workloads, out, preset, filter;
  std::string threads = std::to_string(RunPart{}.threads.at(0));
  unsigned reps = RunRequest{}.reps, warmup = RunRequest{}.warmup, replace_flagged = RunRequest{}.replace_flagged;
  std::string counters = RunRequest{}.counters;
  std::string sim_l1, sim_ll;
  bool require_counters = RunRequest{}.require_counters;
  bool dry_run = false;
  unsigned schedtrace_ms = RunRequest{}.schedtrace_ms;
  std::string trace_path;
  std::size_t trace_max_events = RunRequest{}.trace_max_events;
  std::optional<std::uint64_t> order_seed;
  std::string memory_budget;
  std::string against;
  std::map<std::string, std::string> params;  // --NAME for every scheduler/workload parameter
  CLI::Option* reps_opt = nullptr;
  CLI::Option* warmup_opt = nullptr;
  CLI::Option* replace_flagged_opt = nullptr;
};

// The registry's default of parameter `name`: "27" when every scheduler and workload declaring it
// agrees, else per owner ("fib-go 27, fib 30").
std::string param_defaults(const std::string& name) {
  std::vector<std::pair<std::string, std::string>> owners;  // owner, default
  const auto collect = [&](const std::string& owner, const std::vector<ParamSpec>& specs) {
    for (const ParamSpec& p : specs) {
      if (p.name == name) owners.emplace_back(owner, p.default_value);
    }
  };
  for (const auto& w : workload_registry()) collect(w.name, w.params);
  for (const auto& s : scheduler_registry()) collect(s.name, s.params);
  const bool same = std::all_of(owners.begin(), owners.end(), [&](const auto& o) { return o.second == owners.front().second; });
  if (same) return owners.empty() ? "" : owners.front().second;
  std::string text;
  for (const auto& [owner, value] : owners) text += (text.empty() ? "" : ", ") + owner + " " + value;
  return text;
}

// --sim-l1 / --sim-ll, on `run` and on `counters` (which shows the geometry a run would use).
void add_geometry_options(CLI::App& cmd, std::string& sim_l1, std::string& sim_ll) {
  cmd.add_option("--sim-l1", sim_l1,
                 "Simulated L1 data cache as SIZE,ASSOC,LINE (default: this machine's, from sysfs or CPUID)");
  cmd.add_option("--sim-ll", sim_ll,
                 "Simulated last-level cache, also the model's per-core cache, as SIZE,ASSOC,LINE (default: this "
                 "machine's per-core L2, from sysfs or CPUID)");
}

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* run = app.add_subcommand("run", "Run schedulers x workloads x thread counts, write a CSV");
  run->add_option("--preset", o.preset, "Run a named preset (see list) instead of a selection");
  run->add_option("--scheduler", o.schedulers, "Schedulers, comma-separated (see list)");
  run->add_option("--workload", o.workloads, "Workloads, comma-separated (see list)");
  run->add_option("--threads", o.threads,
                  "Worker thread counts, comma-separated (GOMAXPROCS), or auto: 1, 2, 4, ... up to the usable CPUs, "
                  "or all: the usable CPUs' count")
      ->capture_default_str();
  o.reps_opt = run->add_option("--reps", o.reps, "Measured repetitions per case (a preset sets its own)")
                   ->capture_default_str();
  o.warmup_opt = run->add_option("--warmup", o.warmup, "Untimed runs before the repetitions (a preset sets its own)")
                     ->capture_default_str();
  o.replace_flagged_opt =
      run->add_option("--replace-flagged", o.replace_flagged,
                      "At most this many extra repetitions per block, run after the others, to replace the "
                      "block's repetitions flagged slow_cpu or noisy, which the claims leave out (a preset sets "
                      "its own)")
          ->capture_default_str()
          ->check(CLI::Range(0u, 1000u));
  run->add_option("--filter", o.filter,
                  "Only the cases whose name matches this regular expression (as --benchmark_filter; names as "
                  "--dry-run prints them); also with --preset");
  run->add_flag("--dry-run,--list", o.dry_run,
                "Print the cases (after --filter) and what is known of their size, run nothing, write nothing");
  run->add_option("--counters", o.counters,
                  "Hardware/kernel events per worker: default, none, sw, cache, or columns; plus sim (each "
                  "repetition under Valgrind's cache simulator) and model (per-core cache model of the "
                  "recorded footprints) (see `schedlab counters`)")
      ->capture_default_str();
  add_geometry_options(*run, o.sim_l1, o.sim_ll);
  run->add_flag("--require-counters", o.require_counters,
                "Refuse to run if a selected counter is unavailable (default: run, leaving its cells empty)");
  run->add_option("--trace", o.trace_path,
                  "Write a Chrome trace-event timeline (Perfetto) of each case's first repetition (default: none)");
  run->add_option("--trace-max-events", o.trace_max_events, "Cap on events in the --trace file")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000000}));
  run->add_option("--schedtrace", o.schedtrace_ms,
                  "Print Go-style SCHED lines on stderr every MS milliseconds, under a line naming the case "
                  "(default: off)")
      ->check(CLI::Range(1u, 3600000u));
  run->add_option("--out", o.out, "CSV to create (default results/run-DATE-HOST.csv); never overwritten");
  run->add_option("--memory-budget", o.memory_budget,
                  "Stop a run whose live tasks would hold more memory than this (bytes, suffixes K, M, G; "
                  "default: half of MemAvailable; see docs/reliability.md)");
  run->add_option("--against", o.against,
                  "A/B run: measure every case under this binary and under OTHER (another schedlab binary), "
                  "interleaved and paired per block, with an A/A control; `scripts/compare RUN.csv` judges it");
  run->add_option("--order-seed", o.order_seed,
                  "Seed of the order cases run in within each repetition (default: drawn at random; "
                  "the sidecar records it)");
  for (const ParamSpec& p : all_param_specs()) {
    // A help text that explains its default itself (a machine-dependent one) is left alone.
    const std::string defaults = param_defaults(p.name);
    const bool said = defaults.empty() || p.help.find("default") != std::string::npos;
    run->add_option("--" + p.name, o.params[p.name], param_meaning(p.name) + (said ? "" : " (default: " + defaults + ")"));
  }
  return run;
}

// A preset is the whole selection; only the repetitions and the output may be overridden.
RunRequest preset_request(const RunOptions& o, const CLI::App& run, const std::string& presets_file) {
  for (const char* flag : {"--scheduler", "--workload", "--threads"}) {
    if (run.count(flag) != 0) {
      throw ParamError(std::string(flag) + " cannot be combined with --preset; edit the preset or drop --preset");
    }
  }
  for (const auto& [name, text] : o.params) {
    if (!text.empty()) throw ParamError("--" + name + " cannot be combined with --preset; edit the preset or drop --preset");
  }
  RunRequest request = load_preset(presets_file, o.preset);
  if (o.reps_opt->count() != 0) request.reps = o.reps;
  if (o.warmup_opt->count() != 0) request.warmup = o.warmup;
  if (o.replace_flagged_opt->count() != 0) request.replace_flagged = o.replace_flagged;
  return request;
}

RunRequest selection_request(const RunOptions& o) {
  RunPart part;
  if (!o.schedulers.empty()) part.schedulers = split_list("scheduler", o.schedulers);
  if (!o.workloads.empty()) part.workloads = split_list("workload", o.workloads);
  part.threads.clear();
  for (const std::string& item : split_list("threads", o.threads)) {
    for (unsigned t : thread_counts(item)) part.threads.push_back(t);
  }
  for (const auto& [name, text] : o.params) {
    if (!text.empty()) part.params[name] = split_list(name, text);
  }
  RunRequest request;
  request.parts.push_back(std::move(part));
  request.reps = o.reps;
  request.warmup = o.warmup;
  request.replace_flagged = o.replace_flagged;
  return request;
}

RunRequest build_request(const RunOptions& o, const CLI::App& run, const std::string& presets_file, int argc,
                         char** argv) {
  RunRequest request = o.preset.empty() ? selection_request(o) : preset_request(o, run, presets_file);
  request.counters = o.counters;
  request.sim_l1 = o.sim_l1;
  request.sim_ll = o.sim_ll;
  request.require_counters = o.require_counters;
  request.schedtrace_ms = o.schedtrace_ms;
  request.trace_path = o.trace_path;
  request.trace_max_events = o.trace_max_events;
  request.filter = o.filter;
  if (!o.memory_budget.empty()) {
    const ParamSpec spec{"memory-budget", ParamKind::size, "", "", kMinMemoryBudget, std::int64_t{1} << 50, {}};
    request.memory_budget = static_cast<std::uint64_t>(std::stoll(spec.canonical(o.memory_budget)));
  }
  if (!o.against.empty()) {
    if (::access(o.against.c_str(), X_OK) != 0) {
      throw ParamError("--against " + o.against + ": not an executable file; give the path of another schedlab binary");
    }
    request.against = o.against;
  }
  request.order_seed = o.order_seed ? *o.order_seed : std::random_device{}();
  request.command_line.assign(argv, argv + argc);
  request.progress = ::isatty(2) != 0;
  return request;
}

// A value given empty (--n '') is refused, not read as "the default".
void refuse_empty_values(const CLI::App& run) {
  for (const CLI::Option* opt : run.get_options()) {
    if (opt->count() == 0) continue;
    for (const std::string& value : opt->results()) {
      if (value.empty()) {
        throw ParamError(opt->get_name() + ": empty value; give one, or leave " + opt->get_name() +
                         " out for its default");
      }
    }
  }
}

// Edits (insert, delete, substitute one character) that turn a into b: Levenshtein's distance.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];  // row[i-1][j-1]
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A typo is at most this many edits from the command meant ("runn", "lsit"): further off, a
// suggestion would more likely mislead than help.
constexpr std::size_t kTypoEdits = 2;

// When no command was recognised: the first word that is not an option, named, with the nearest
// command when it looks like a typo of one (`schedlab runn` would otherwise be told only that a
// command is required). Hidden commands (an empty group) are neither listed nor suggested.
std::optional<std::string> unknown_command(const CLI::App& app, int argc, char** argv) {
  if (!app.get_subcommands().empty()) return std::nullopt;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--presets-file") {
      ++i;  // its value
    } else if (word.rfind('-', 0) != 0) {
      std::string names, nearest;
      std::size_t nearest_edits = kTypoEdits + 1;
      for (const CLI::App* sub : app.get_subcommands([](const CLI::App* c) { return !c->get_group().empty(); })) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
        const std::size_t edits = edit_distance(word, sub->get_name());
        if (edits < nearest_edits) std::tie(nearest, nearest_edits) = std::pair{sub->get_name(), edits};
      }
      return "unknown command '" + word + "': " + (nearest.empty() ? "" : "did you mean '" + nearest + "'? ") +
             "choose one of " + names;
    }
  }
  return std::nullopt;
}

int main_impl(int argc, char** argv) {
  CLI::App app{"schedlab: benchmark suite and harness for task schedulers"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  app.set_version_flag("--version", [] { return version_text(); }, "Show the version, git commit and build type");
  std::string presets_file = default_presets_path();
  app.add_option("--presets-file", presets_file, "The presets file")->capture_default_str();
  CLI::App* list_cmd = app.add_subcommand("list", "List schedulers, workloads, their parameters and the presets");
  bool list_markdown = false;
  std::string list_table = "all";
  list_cmd->add_flag("--markdown", list_markdown, "As the Markdown tables docs/ shows");
  bool list_json = false;
  list_cmd->add_flag("--json", list_json,
                     "Every parameter's default, canonical, as a sidecar's `parameters` (for scripts and tests)");
  list_cmd->add_option("table", list_table, "With --markdown: schedulers, workloads, presets or all")
      ->capture_default_str();
  CLI::App* counters_cmd = app.add_subcommand(
      "counters", "Show which hardware and kernel counters this machine can read, and why not the others; the "
                  "simulated and modelled cache counters and their geometry");
  std::string report_l1, report_ll;
  add_geometry_options(*counters_cmd, report_l1, report_ll);
  // The child of a simulated repetition (sim_subject.hpp); hidden: its group is empty.
  // An A/B run's server (served_subject.hpp); hidden too.
  app.add_subcommand("serve", "")->group("");
  CLI::App* child = app.add_subcommand("simulated-repetition", "")->group("");
  std::string child_request, child_out;
  child->add_option("--request", child_request)->required();
  child->add_option("--out", child_out)->required();
  CLI::App* columns_cmd = app.add_subcommand("columns", "Describe the CSV's columns (the schema in harness/row.cpp)");
  bool markdown = false, json = false;
  columns_cmd->add_flag("--markdown", markdown, "As docs/output.md's Markdown table");
  columns_cmd->add_flag("--json", json, "As the sidecar's `schema` (JSON)");
  RunOptions options;
  CLI::App* run = add_run_command(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "schedlab: error: %s; see `schedlab --help`\n",
                 unknown_command(app, argc, argv).value_or(e.what()).c_str());
    return kExitRefused;
  }
  if (app.got_subcommand("list")) {
    if (list_table != "all" && !list_markdown) throw ParamError("list " + list_table + ": a table name needs --markdown");
    if (list_json) {
      if (list_markdown) throw ParamError("list: --json and --markdown are two formats; choose one");
      std::cout << nlohmann::json{{"parameters", parameter_defaults()}}.dump(2) << "\n";
      return 0;
    }
    return list_markdown ? cmd_list_markdown(presets_file, list_table) : cmd_list(presets_file);
  }
  if (app.got_subcommand("counters")) return print_counter_report(std::cout, report_l1, report_ll);
  if (app.got_subcommand("simulated-repetition")) {
    run_simulated_repetition(child_request, child_out);
    return 0;
  }
  if (app.got_subcommand("serve")) return serve();
  if (app.got_subcommand("columns")) return cmd_columns(markdown, json);
  refuse_empty_values(*run);
  return cmd_run(build_request(options, *run, presets_file, argc, argv), options.out, presets_file, options.dry_run);
}

// A second stop request: the run in progress is abandoned. The go-runtime program's process
// group is killed (it would run on, orphaned), a row being written is let finish and no other
// begins (the lock is kept: the exit cannot cut a row), and the sidecar is marked interrupted.
[[noreturn]] void stop_now() {
  g_stopping_now.store(true);  // before the kill: the repetition it fails reads this
  kill_go_reference();
  (void)row_write_lock().try_lock_for(std::chrono::seconds(2));  // a write stuck longer is given up on
  write_interrupted_last_words();
  std::_Exit(kExitInterrupted);
}

// SIGINT, SIGTERM and SIGHUP (a dropped ssh session) are blocked in every thread (the mask is
// inherited, so this runs before any other thread starts) and taken by one watcher thread with
// sigwait: no async-signal-safety puzzles. The first asks the runner to stop after the
// repetition in progress, which keeps every completed row and marks the run interrupted; a
// second one stops at once (stop_now). SIGPIPE (stderr piped to a reader that went away with the
// session) and SIGXFSZ (a file-size limit) are ignored: the writes fail with an errno instead,
// which the CSV and sidecar report, rather than killing the process without a word.
void start_signal_watcher() {
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGXFSZ, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    for (int count = 0;; ++count) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) return;
      if (count == 0) {
        g_stop_requested.store(true);
        std::fprintf(stderr, "\nschedlab: %s: stopping after the repetition in progress (again to stop at once)\n",
                     sig == SIGINT ? "interrupt" : sig == SIGHUP ? "hangup" : "terminate");
      } else {
        std::fprintf(stderr, "\nschedlab: stopping now; completed rows are kept\n");
        stop_now();
      }
    }
  }).detach();
}

}  // namespace
}  // namespace schedlab

int main(int argc, char** argv) {
  schedlab::start_signal_watcher();
  try {
    return schedlab::main_impl(argc, argv);
  } catch (const schedlab::ParamError& e) {
    std::fprintf(stderr, "schedlab: error: %s\n", e.what());
    return schedlab::kExitRefused;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "schedlab: error: %s\n", e.what());
    return schedlab::kExitFailed;
  }
}
