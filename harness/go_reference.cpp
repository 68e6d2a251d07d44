#include "go_reference.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "errno_text.hpp"
#include "latency_file.hpp"
#include "registry.hpp"
#include "schedtrace.hpp"

extern char** environ;

namespace schedlab {
namespace {

// Set by CMake (workloads/go/CMakeLists.txt): empty when no Go toolchain was found.
constexpr const char* kBuiltBinary = SCHEDLAB_GO_BINARY;

// The running child, which leads its own process group; 0 when none runs. A second interrupt
// that lands between posix_spawn's return and the store below misses the child: it then runs
// its one repetition to the end on its own.
std::atomic<pid_t> g_child{0};

// The child's own process group, an empty signal mask and the default action of the signals
// schedlab blocks (SIGINT, SIGTERM, SIGHUP: the watcher takes them) or ignores (SIGPIPE,
// SIGXFSZ): the mask and ignored actions would otherwise pass to the Go program through exec.
struct SpawnAttributes {
  posix_spawnattr_t attr;
  SpawnAttributes() {
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr); }
};

// The environment of the child: ours, with GOMAXPROCS (and GODEBUG when tracing) replaced.
std::vector<std::string> child_environment(unsigned threads, unsigned schedtrace_ms) {
  auto is = [](const char* entry, const char* name) {
    const std::size_t n = std::strlen(name);
    return std::strncmp(entry, name, n) == 0 && entry[n] == '=';
  };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (is(*e, "GOMAXPROCS") || (schedtrace_ms > 0 && is(*e, "GODEBUG"))) continue;
    env.emplace_back(*e);
  }
  env.push_back("GOMAXPROCS=" + std::to_string(threads));
  if (schedtrace_ms > 0) env.push_back("GODEBUG=schedtrace=" + std::to_string(schedtrace_ms));
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct Finished {
  int wait_status = 0;
  std::string out;  // everything the child wrote on stdout
};

// Runs `path` with `argv` and `env`, no shell; stdout is captured, stderr is shared with ours.
Finished run_capturing_stdout(const std::string& path, std::vector<std::string> argv,
                              std::vector<std::string> env) {
  int pipe_fds[2];
  // Close-on-exec, so that a child another thread starts meanwhile does not hold the write end
  // open (the read below would never see end of file).
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::runtime_error("cannot create a pipe for " + path + ": " + errno_text(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);  // dup2 clears cloexec
  pid_t pid = 0;
  const std::vector<char*> c_argv = c_strings(argv);
  const std::vector<char*> c_env = c_strings(env);
  const SpawnAttributes attributes;
  const int spawn_error =
      ::posix_spawn(&pid, path.c_str(), &actions, &attributes.attr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error == 0) g_child.store(pid);
  ::close(pipe_fds[1]);
  if (spawn_error != 0) {
    ::close(pipe_fds[0]);
    throw std::runtime_error("cannot run " + path + ": " + errno_text(spawn_error));
  }

  Finished f;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n > 0) {
      f.out.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;  // end of file, or an error: the exit status below tells what happened
    }
  }
  ::close(pipe_fds[0]);
  while (::waitpid(pid, &f.wait_status, 0) < 0) {
    if (errno != EINTR) {
      g_child.store(0);
      throw std::runtime_error("cannot wait for " + path + ": " + errno_text(errno));
    }
  }
  g_child.store(0);
  return f;
}

std::string describe_exit(int wait_status) {
  if (WIFEXITED(wait_status))
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status))
    return std::string("was killed by signal ") + strsignal(WTERMSIG(wait_status));
  return "stopped";
}

}  // namespace

std::string go_reference_binary() {
  const char* over = std::getenv("SCHEDLAB_GO_BINARY");
  return over != nullptr && *over != '\0' ? over : kBuiltBinary;
}

std::optional<std::string> go_reference_unavailable() {
  const std::string binary = go_reference_binary();
  if (binary.empty()) {
    return "no Go toolchain was found when schedlab was configured: install Go >= 1.19 "
           "(Debian: golang-go) and re-run cmake, or point SCHEDLAB_GO_BINARY at a schedlab-go";
  }
  if (::access(binary.c_str(), X_OK) != 0) {
    const bool overridden = binary != kBuiltBinary;
    return "the go-runtime program " + binary + " cannot be run (" + errno_text(errno) + "): " +
           (overridden ? "fix SCHEDLAB_GO_BINARY or unset it"
                       : "build it with `cmake --build BUILD_DIR --target schedlab_go`");
  }
  return std::nullopt;
}

void kill_go_reference() noexcept {
  const pid_t child = g_child.load();
  if (child > 0) ::kill(-child, SIGKILL);
}

bool go_supports_workload(const std::string& workload) {
  for (const WorkloadEntry& w : workload_registry()) {
    if (w.name == workload) return w.go_twin;
  }
  return false;
}

std::vector<GoRun> run_go_reference(const std::string& workload,
                                    const std::vector<std::pair<std::string, std::string>>& args,
                                    unsigned threads, unsigned warmup, unsigned reps,
                                    unsigned schedtrace_ms) {
  if (const auto why = go_reference_unavailable()) throw std::runtime_error(*why);
  const std::string binary = go_reference_binary();
  // --NAME=VALUE, one argument each: a value that starts with '-' cannot pass for a flag.
  std::vector<std::string> argv{binary, workload};
  for (const auto& [name, value] : args) argv.push_back("--" + name + "=" + value);
  argv.push_back("--warmup=" + std::to_string(warmup));
  argv.push_back("--reps=" + std::to_string(reps));
  const Finished f = run_capturing_stdout(binary, argv, child_environment(threads, schedtrace_ms));

  const std::string who = "go-runtime " + workload;
  std::vector<GoRun> runs;
  std::size_t start = 0;
  while (start < f.out.size()) {
    std::size_t end = f.out.find('\n', start);
    if (end == std::string::npos) end = f.out.size();
    const std::string line = f.out.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("ok") || !j["ok"].is_boolean()) {
      throw std::runtime_error(who + ": unexpected output line from " + binary + ": " + line);
    }
    if (!j["ok"].get<bool>()) {
      const std::string error =
          j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : line;
      throw std::runtime_error(who + ": " + error);
    }
    if (!j.contains("wall_ns") || !j["wall_ns"].is_number() || !j.contains("tasks") ||
        !j["tasks"].is_number()) {
      throw std::runtime_error(who + ": a result line without wall_ns or tasks: " + line);
    }
    GoRun run{j["wall_ns"].get<double>(), j["tasks"].get<double>(), std::nullopt, std::nullopt};
    if (j.contains("threads") && j["threads"].is_number_unsigned()) run.threads = j["threads"].get<std::uint64_t>();
    if (j.contains("sched_latency")) {
      try {
        run.sched_latency = distribution_from_json(j["sched_latency"]);
      } catch (const std::exception& e) {
        throw std::runtime_error(who + ": unreadable sched_latency in a result line (" + e.what() + "): " + line);
      }
    }
    runs.push_back(run);
  }
  if (!WIFEXITED(f.wait_status) || WEXITSTATUS(f.wait_status) != 0) {
    throw std::runtime_error(who + ": " + binary + " " + describe_exit(f.wait_status) +
                             " without reporting an error (its stderr above says more)");
  }
  if (runs.size() != reps) {
    throw std::runtime_error(who + ": " + binary + " printed " + std::to_string(runs.size()) +
                             " results, expected " + std::to_string(reps));
  }
  return runs;
}

Measurement GoProgramSubject::measure(Workload& w, bool /*traced: no timeline from Go*/) {
  std::vector<std::pair<std::string, std::string>> args;
  for (const ParamSpec& p : case_.workload->params) args.emplace_back(p.name, case_.workload_params.at(p.name));
  for (auto& extra : w.external_args()) args.push_back(std::move(extra));
  const bool latency = case_.param("latency") == "on";
  if (latency) args.emplace_back("sched-latency", "on");
  // The Go program prints its own SCHED lines (GODEBUG=schedtrace) on the stderr it shares.
  if (schedtrace_ms_ > 0) std::fprintf(stderr, "%s\n", schedtrace_header(case_.label()).c_str());
  const std::vector<GoRun> runs =
      run_go_reference(case_.workload->name, args, case_.threads, warmup_, 1, schedtrace_ms_);
  Measurement m;
  m.wall_ns = runs.at(0).wall_ns;
  // The one scheduler counter Go tells: its threads (a gauge, like the in-process schedulers').
  if (runs.at(0).threads) m.counters.set(Counter::threads_created, *runs.at(0).threads);
  if (latency) {
    if (!runs.at(0).sched_latency) {
      throw std::runtime_error("go-runtime " + case_.workload->name + ": " + go_reference_binary() +
                               " reported no sched_latency for --latency on; rebuild it (`cmake --build BUILD_DIR "
                               "--target schedlab_go`)");
    }
    m.sched_delay = std::move(runs.at(0).sched_latency);
    m.sched_delay_source = kDelaysFromGo;
  }
  settle_task_count(m, static_cast<std::uint64_t>(runs.at(0).tasks), w.tasks_of_last_run(), case_.label());
  // An open-loop workload's generator loaded the Go program too: its word on the replies, and
  // its measurement of them.
  if (std::string err = w.check_external(); !err.empty()) {
    throw std::runtime_error("wrong result: " + case_.label() + ": " + err);
  }
  m.request = w.request_latency();
  return m;
}

}  // namespace schedlab
