// served_subject.cpp: the A/B mode's servers, their subjects, and `schedlab serve` (see
// served_subject.hpp).
#include "served_subject.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "central/central.hpp"
#include "memory_budget.hpp"
#include "metadata.hpp"
#include "registry.hpp"

extern char** environ;

namespace schedlab {
namespace {

using nlohmann::json;

// The protocol's version: a server that answers hello with another is refused. (Replies' cpu_ns
// came later within version 1: a server without it is still served, its CPU read from /proc.)
constexpr int kProtocol = 1;

// This process's CPU time, user + system, its ended threads included (os-threads' task threads).
double process_cpu_ns() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_usec) * 1e3; };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

// Another process's CPU time from /proc/PID/stat (utime and stime, the 14th and 15th fields, in
// clock ticks); -1 when it cannot be read.
double proc_cpu_ns(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  double utime = -1, stime = -1;
  for (int k = 3; k <= 15 && fields >> field; ++k) {  // field 3 is the state
    if (k == 14) utime = std::strtod(field.c_str(), nullptr);
    if (k == 15) stime = std::strtod(field.c_str(), nullptr);
  }
  if (utime < 0 || stime < 0) return -1;
  return (utime + stime) * 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace

BuildServer::BuildServer(std::string build, std::string binary, std::uint64_t memory_budget)
    : build_(std::move(build)), binary_(std::move(binary)) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/schedlab-serve-XXXXXX";
  const int err_fd = ::mkstemp(path.data());
  if (err_fd < 0) {
    throw std::runtime_error("cannot create a file for the A/B server's messages in " + path + ": " +
                             std::strerror(errno) + "; set TMPDIR to a writable directory");
  }
  stderr_path_ = path;
  int in[2], out[2];  // [0] read end, [1] write end
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    ::close(err_fd);
    throw std::runtime_error(failed("cannot make its pipes: " + std::string(std::strerror(errno))));
  }
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_adddup2(&files, in[0], 0);
  posix_spawn_file_actions_adddup2(&files, out[1], 1);
  posix_spawn_file_actions_adddup2(&files, err_fd, 2);
  std::string serve = "serve";
  char* argv[] = {binary_.data(), serve.data(), nullptr};
  const int rc = ::posix_spawn(&pid_, binary_.c_str(), &files, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&files);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err_fd);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    pid_ = -1;
    throw std::runtime_error("--against: cannot start " + binary_ + ": " + std::strerror(rc) +
                             "; give the path of another schedlab binary");
  }
  to_ = ::fdopen(in[1], "w");
  from_ = ::fdopen(out[0], "r");
  try {
    hello_ = call({{"op", "hello"}, {"memory_budget", memory_budget}});
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("--against: " + binary_ + " does not serve A/B runs (" + e.what() +
                             "); give a schedlab binary built with `schedlab serve`, or run the builds separately and "
                             "compare with scripts/compare");
  }
  if (hello_.value("protocol", 0) != kProtocol) {
    throw std::runtime_error("--against: " + binary_ + " speaks A/B protocol " + std::to_string(hello_.value("protocol", 0)) +
                             ", this binary " + std::to_string(kProtocol) + "; rebuild one of them from the same source");
  }
}

BuildServer::~BuildServer() {
  if (to_ != nullptr) std::fclose(to_);  // end of input: the server cleans up and exits
  if (from_ != nullptr) std::fclose(from_);
  if (pid_ > 0) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    add_live_child_cpu_ns(-reported_cpu_ns_);  // RUSAGE_CHILDREN counts all of it from now on
  }
  if (!stderr_path_.empty()) ::unlink(stderr_path_.c_str());
}

std::string BuildServer::failed(const std::string& what) const {
  return "the A/B server of build " + build_ + " (" + binary_ + ") " + what;
}

json BuildServer::call(const json& request) {
  const std::string line = request.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), to_) != line.size() || std::fflush(to_) != 0) {
    const std::string why = child_error_line(stderr_path_);
    throw std::runtime_error(failed("ended" + (why.empty() ? std::string() : ": " + why)));
  }
  char* text = nullptr;
  std::size_t capacity = 0;
  const ssize_t n = ::getline(&text, &capacity, from_);
  const std::string reply_text = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string();
  std::free(text);
  if (n <= 0) {
    const std::string why = child_error_line(stderr_path_);
    throw std::runtime_error(failed("ended" + (why.empty() ? std::string() : ": " + why)));
  }
  json reply;
  try {
    reply = json::parse(reply_text);
  } catch (const json::exception&) {
    throw std::runtime_error(failed("answered something that is not the A/B protocol: " + reply_text.substr(0, 80)));
  }
  note_cpu(reply);
  if (reply.contains("error")) throw std::runtime_error("build " + build_ + ": " + reply["error"].get<std::string>());
  return reply;
}

void BuildServer::note_cpu(const json& reply) {
  const auto it = reply.find("cpu_ns");
  const double total = it != reply.end() && it->is_number() ? it->get<double>() : proc_cpu_ns(pid_);
  if (total < reported_cpu_ns_) return;  // unreadable (-1), or /proc's ticks behind a reply's figure
  add_live_child_cpu_ns(total - reported_cpu_ns_);
  reported_cpu_ns_ = total;
}

json BuildServer::describe() const {
  return {{"binary", binary_}, {"build", hello_.value("build", json::object())}};
}

ServedSubject::ServedSubject(BuildServer& server, const Case& c) : server_(server), id_(server.next_id()) {
  server_.call({{"op", "build"}, {"id", id_}, {"case", case_json(c)}});
}

ServedSubject::~ServedSubject() {
  try {
    server_.call({{"op", "destroy"}, {"id", id_}});
  } catch (const std::exception&) {  // the server ended: what it held went with it
  }
}

void ServedSubject::warm_up(Workload&, unsigned runs) { server_.call({{"op", "warm_up"}, {"id", id_}, {"runs", runs}}); }

Measurement ServedSubject::measure(Workload&, bool) {
  return measurement_from_json(server_.call({{"op", "measure"}, {"id", id_}}).at("measurement"));
}

BuildServers start_build_servers(const std::string& against, std::uint64_t memory_budget) {
  // This very binary, through this process's /proc entry: the same file even if a rebuild has
  // replaced it on disk since the run began.
  const std::string self = "/proc/" + std::to_string(::getpid()) + "/exe";
  BuildServers servers;
  try {
    for (const auto& [build, binary] : {std::pair{kBuildA, self}, std::pair{kBuildA2, self}, std::pair{kBuildB, against}}) {
      servers[build] = std::make_unique<BuildServer>(build, binary, memory_budget);
    }
  } catch (const std::runtime_error& e) {
    throw ParamError(e.what());
  }
  return servers;
}

int serve() {
  struct Prepared {
    std::unique_ptr<Workload> workload;
    unsigned users = 0;
  };
  struct Served {
    std::unique_ptr<InProcessSubject> subject;
    std::string workload;  // its key in `prepared`
  };
  std::map<std::string, Prepared> prepared;  // by workload and parameters
  std::map<std::uint64_t, Served> served;    // by the parent's id
  std::uint64_t delay = 0;
  if (const char* text = std::getenv(kServeTestDelayEnv); text != nullptr && *text != '\0') delay = std::stoull(text);
  if (const char* text = std::getenv(kServeTestCentralSpawnDelayEnv); text != nullptr && *text != '\0') {
    set_central_test_spawn_delay_ns(std::stoull(text));
  }

  auto release = [&](const std::string& key) {
    Prepared& p = prepared.at(key);
    if (--p.users == 0) {
      p.workload->cleanup();
      prepared.erase(key);
    }
  };
  for (std::string line; std::getline(std::cin, line);) {
    json reply;
    try {
      const json r = json::parse(line);
      const std::string op = r.at("op").get<std::string>();
      if (op == "hello") {
        if (const auto budget = r.value("memory_budget", std::uint64_t{0}); budget != 0) set_memory_budget(budget);
        reply = {{"protocol", kProtocol}, {"build", build_info()}};
      } else if (op == "build") {
        const Case c = case_from_json(r.at("case"));
        if (c.scheduler->external()) throw ParamError(c.scheduler->name + " runs another program; it cannot be served");
        const std::string key = c.workload->name + "(" + describe(c.workload->params, c.workload_params) + ")";
        Prepared& p = prepared[key];
        if (!p.workload) {
          try {
            p.workload = c.workload->make(c.workload_params);
            p.workload->prepare();
          } catch (...) {
            if (p.workload) p.workload->cleanup();
            prepared.erase(key);
            throw;
          }
        }
        ++p.users;
        Served s{nullptr, key};
        try {
          s.subject = in_process_subject(*c.scheduler, c.threads, c.scheduler_params, c.label(), Watchers{});
        } catch (...) {
          release(key);
          throw;
        }
        s.subject->slow_down_for_test(delay);
        served.emplace(r.at("id").get<std::uint64_t>(), std::move(s));
      } else if (op == "warm_up" || op == "measure") {
        Served& s = served.at(r.at("id").get<std::uint64_t>());
        Workload& w = *prepared.at(s.workload).workload;
        if (op == "warm_up") {
          s.subject->warm_up(w, r.at("runs").get<unsigned>());
        } else {
          reply["measurement"] = measurement_to_json(s.subject->measure(w, /*traced=*/false));
        }
      } else if (op == "destroy") {
        const auto it = served.find(r.at("id").get<std::uint64_t>());
        if (it != served.end()) {
          const std::string key = it->second.workload;
          served.erase(it);
          release(key);
        }
      } else {
        throw ParamError("unknown request '" + op + "'");
      }
      reply["ok"] = true;
    } catch (const std::exception& e) {
      reply = {{"error", e.what()}};
    }
    reply["cpu_ns"] = process_cpu_ns();    // the parent counts it as the run's own
    std::cout << reply.dump() << std::endl;  // flushed: the parent waits for this line
  }
  served.clear();  // the schedulers first, then the workloads' files
  for (auto& [key, p] : prepared) p.workload->cleanup();
  return 0;
}

}  // namespace schedlab
