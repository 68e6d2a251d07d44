// sim_subject.cpp: the parent's and the child's side of a simulated repetition (see
// sim_subject.hpp).
#include "sim_subject.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "counters/sim.hpp"
#include "registry.hpp"

extern char** environ;

namespace schedlab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json request_json(const Case& c, const SimSettings& s) {
  json r = case_json(c);
  r["warmup"] = s.warmup;
  r["model"] = c.modelled ? s.geometry.ll.json() : json();
  return r;
}

// Runs argv with its stderr in `stderr_path` and waits; returns the wait status. The child
// keeps this process's group, so a terminal's Ctrl-C reaches it too: its own signal watcher
// (main.cpp) then finishes the repetition, as this process does.
int spawn_and_wait(const std::vector<std::string>& args, const std::string& stderr_path) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// A scratch directory removed when it goes out of scope.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/schedlab-sim-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a scratch directory in " + pattern + ": " + std::strerror(errno) +
                               "; set TMPDIR to a writable directory");
    }
    path = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

}  // namespace

Measurement SimSubject::measure(Workload&, bool) {
  if (const auto why = simulator_unavailable()) throw std::runtime_error("simulated run: " + *why);
  const ScratchDir dir;
  const std::string dump = (dir.path / "callgrind.out").string();
  const std::string result = (dir.path / "measurement.json").string();
  const std::string errors = (dir.path / "stderr").string();
  std::vector<std::string> args = simulator_command(settings_.geometry, dump);
  // This very binary, through this process's /proc entry: the same file even if a rebuild has
  // replaced it on disk since the run began (Valgrind would open its own /proc/self/exe).
  const std::string self = "/proc/" + std::to_string(::getpid()) + "/exe";
  args.insert(args.end(), {self, "simulated-repetition", "--request", request_json(case_, settings_).dump(), "--out", result});
  const int status = spawn_and_wait(args, errors);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                              : "signal " + std::to_string(WTERMSIG(status));
    const std::string error = child_error_line(errors);
    throw std::runtime_error(error.empty() ? "simulated run of " + case_.label() + " failed (" + how + ")" : error);
  }
  std::ifstream in(result);
  json j;
  try {
    in >> j;
  } catch (const json::exception& e) {
    throw std::runtime_error("simulated run of " + case_.label() + " wrote no readable measurement (" + e.what() + ")");
  }
  Measurement m = measurement_from_json(j);
  m.sim = read_region_counts(dump);
  return m;
}

void run_simulated_repetition(const std::string& request_json_text, const std::string& out_path) {
  const json r = json::parse(request_json_text);
  const Case c = case_from_json(r);
  const SchedulerEntry& s = *c.scheduler;
  const WorkloadEntry& w = *c.workload;
  const ParamValues& sp = c.scheduler_params;
  const ParamValues& wp = c.workload_params;
  const unsigned threads = c.threads;
  if (s.external()) throw ParamError("scheduler " + s.name + " is an external program; it cannot be simulated");
  Watchers watchers{nullptr, nullptr, nullptr, std::nullopt};
  if (!r.at("model").is_null()) {
    const json& g = r["model"];
    watchers.model = CacheGeometry{g.at("size").get<std::uint64_t>(), g.at("assoc").get<std::uint64_t>(),
                                   g.at("line").get<std::uint64_t>()};
  }
  std::unique_ptr<Workload> workload = w.make(wp);
  struct Cleanup {
    Workload& w;
    ~Cleanup() { w.cleanup(); }
  } cleanup{*workload};
  workload->prepare();
  const std::unique_ptr<InProcessSubject> subject = in_process_subject(s, threads, sp, c.label(), watchers);
  subject->warm_up(*workload, r.at("warmup").get<unsigned>());
  subject->bracket_next_run_for_simulator();
  const Measurement m = subject->measure(*workload, /*traced=*/false);
  std::ofstream out(out_path);
  out << measurement_to_json(m).dump() << "\n";
  if (!out.flush()) throw std::runtime_error("cannot write " + out_path + ": " + std::strerror(errno));
}

}  // namespace schedlab
