// served_subject.hpp: the A/B mode, two builds measured in one run (`schedlab run --against
// OTHER`), and the server each build runs for it (`schedlab serve`).
//
// Two separate runs differ by a few percent as a whole on a shared VM, so per-case tests between
// them cannot tell that drift from a code change. Inside one run the suite pairs variants within
// a block; an A/B run does the same for builds:
//
//   parent (`schedlab run --against OTHER`): three servers, long-lived children each reading
//     one JSON request a line on its stdin and answering one on its stdout:
//       A  = this binary          `schedlab serve`
//       A2 = this binary again    `schedlab serve`   (the A/A control)
//       B  = OTHER                `OTHER serve`
//   every case of the run becomes three cases (Case::build A, A2, B) in the same block, so each
//   repetition measures the case under every build, in a shuffled order, before the next
//   repetition of any: B / A paired per block is the build's effect, A2 / A the noise floor of
//   the same run (`scripts/compare RUN.csv` judges one against the other).
//   a ServedSubject forwards build + warm-up, measure and destroy to its build's server, which
//   keeps the case's scheduler and prepared workload alive in its own process and measures with
//   the protocol of a native run (InProcessSubject, measure.hpp).
//
// All three builds are children set up alike, so that A2 / A holds everything the process
// boundary and the machine add, and B / A what the build adds beyond it. One child measures at a
// time; the others wait on their pipe with their workers parked. The servers count no hardware
// or kernel events and no caches (an A/B run compares time).
//
// Protocol (one JSON object a line; every reply has "ok": true, or "error": the one-line reason,
// and "cpu_ns": the server's CPU time so far, which the parent counts as the run's own:
// machine_load.hpp, add_live_child_cpu_ns):
//   {"op": "hello", "memory_budget": BYTES}          -> {"ok", "protocol", "build": build_info}
//   {"op": "build", "id": N, "case": case_json}      -> the subject built (its workload prepared)
//   {"op": "warm_up", "id": N, "runs": R}
//   {"op": "measure", "id": N}                       -> {"ok", "measurement": ...}
//   {"op": "destroy", "id": N}
// End of input: the server destroys everything and exits 0.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "measure.hpp"
#include "plan.hpp"

namespace schedlab {

// The served child's test hook, never read by `schedlab run`: a build slowed on purpose for the
// A/B mode's own tests (tests/cli/ab_test.sh). With it set to N, every measured region in the
// server spins N ns per task the workload expects before the root's body runs, as if each spawn
// cost N ns more.
inline constexpr char kServeTestDelayEnv[] = "SCHEDLAB_SERVE_TEST_DELAY_NS_PER_TASK";
// The second hook, a planted regression on one path only: with it set to N, every spawn of the
// central scheduler in the server spins N ns (central.hpp, set_central_test_spawn_delay_ns), and
// nothing else changes: an A/B run must find central's cases slower and no other.
inline constexpr char kServeTestCentralSpawnDelayEnv[] = "SCHEDLAB_SERVE_TEST_CENTRAL_SPAWN_DELAY_NS";

// One build's server, started by the constructor and ended by the destructor (its stdin closed,
// the child waited for). Executed only by the runner's thread.
class BuildServer {
 public:
  // Starts `binary serve` and says hello. Throws std::runtime_error naming the build, the binary
  // and the fix when it cannot start or does not serve (a build older than the A/B mode).
  BuildServer(std::string build, std::string binary, std::uint64_t memory_budget);
  ~BuildServer();
  BuildServer(const BuildServer&) = delete;
  BuildServer& operator=(const BuildServer&) = delete;

  // Sends `request` and returns the reply. Throws std::runtime_error with the server's own error,
  // or naming the build when it ended.
  nlohmann::json call(const nlohmann::json& request);
  // A new request id.
  std::uint64_t next_id() { return ++ids_; }
  // For the sidecar: the build, the binary, and what it says of itself (build_info).
  nlohmann::json describe() const;

 private:
  std::string failed(const std::string& what) const;
  // Counts what the server used since its last reply as this run's own CPU time: from the
  // reply's cpu_ns, or for a build older than that field from /proc/PID/stat (clock ticks).
  void note_cpu(const nlohmann::json& reply);

  std::string build_, binary_;
  double reported_cpu_ns_ = 0;  // what note_cpu() has counted so far
  pid_t pid_ = -1;
  std::FILE* to_ = nullptr;    // its stdin
  std::FILE* from_ = nullptr;  // its stdout
  std::string stderr_path_;    // its stderr, read when it fails
  nlohmann::json hello_;
  std::uint64_t ids_ = 0;
};

// A case measured by a build's server.
class ServedSubject final : public Subject {
 public:
  // Builds the case in the server. Throws std::runtime_error with the server's reason.
  ServedSubject(BuildServer& server, const Case& c);
  ~ServedSubject() override;  // destroys it in the server (a failure there is dropped)
  void warm_up(Workload& w, unsigned runs) override;
  Measurement measure(Workload& w, bool traced) override;

 private:
  BuildServer& server_;
  const std::uint64_t id_;
};

// An A/B run's servers by build (kBuildA, kBuildA2: this binary; kBuildB: `against`). Throws
// ParamError naming the binary and the fix when one cannot start or does not serve, before
// anything is written.
using BuildServers = std::map<std::string, std::unique_ptr<BuildServer>>;
BuildServers start_build_servers(const std::string& against, std::uint64_t memory_budget);

// The server: `schedlab serve`, reading requests from stdin and answering on stdout until the
// end of its input. Returns the exit status.
int serve();

}  // namespace schedlab
