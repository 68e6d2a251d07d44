// go_reference.hpp: the go-runtime reference rows.
//
// The seeds' programs are Go programs; schedlab runs their shapes on Go's own scheduler too, as a
// reference next to the C++ schedulers, and the field's benchmarks (skynet was a Go program
// first) beside them. They live in workloads/go (one binary, schedlab-go, built
// when a Go toolchain is found) and mirror the C++ workloads of the same names. Each run is a
// child process with GOMAXPROCS = threads; the program times only its measured region, checks
// its result and prints one JSON line per measured repetition, read here.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "measure.hpp"
#include "plan.hpp"

namespace schedlab {

// The reference program: $SCHEDLAB_GO_BINARY when set and not empty, else the one this build
// made; empty when there is neither.
std::string go_reference_binary();

// Empty if the go-runtime reference can run, else why not (one line, with the fix).
std::optional<std::string> go_reference_unavailable();

// Whether schedlab-go has a version of this workload (its entry's go_twin, registry.hpp).
bool go_supports_workload(const std::string& workload);

// Kills the running schedlab-go, if any, with its process group (it runs in a group of its own,
// so that a terminal's Ctrl-C reaches schedlab only, which lets the repetition finish). For a
// process that ends at once (a second interrupt): async-signal-safe.
void kill_go_reference() noexcept;

// One measured repetition: the program's own wall time of the measured region, the goroutines
// it started plus the root (as schedlab counts tasks), and the OS threads the Go runtime had
// created by then (its threadcreate profile; absent from an older schedlab-go).
struct GoRun {
  double wall_ns;
  double tasks;
  std::optional<std::uint64_t> threads;
  // The measured region's scheduling latencies from Go's runtime/metrics (/sched/latencies:
  // seconds, workloads/go/latency.go), when asked for with the argument sched-latency=on.
  std::optional<LatencyDistribution> sched_latency;
};

// Runs schedlab-go once with GOMAXPROCS=threads: `warmup` unreported repetitions, then `reps`
// measured ones, whose results come back in order. `args` are passed as --NAME=VALUE: the
// workload's parameters with their canonical values, plus what the Go side needs besides (iomix:
// {"dir", where the files are}). schedtrace_ms > 0 sets GODEBUG=schedtrace=MS; Go's trace goes
// to this process's stderr. Throws std::runtime_error carrying the program's own error when it
// refuses a parameter or a check fails, and one naming the problem when it cannot be started,
// dies or prints something else than expected.
std::vector<GoRun> run_go_reference(const std::string& workload,
                                    const std::vector<std::pair<std::string, std::string>>& args,
                                    unsigned threads, unsigned warmup, unsigned reps,
                                    unsigned schedtrace_ms);

// The go-runtime Subject: each repetition is one run of schedlab-go with `warmup` unreported
// repetitions first (a new process must warm up every time). Its Measurement has the program's
// own wall time, task count and threads created, with --latency on Go's own scheduling
// latencies, and an open-loop workload's request latency (measured by the workload's generator
// in this process); the other scheduler counters, rusage and events are not measured.
// The program checks its own result.
class GoProgramSubject final : public ProcessSubject {
 public:
  GoProgramSubject(const Case& c, unsigned warmup, unsigned schedtrace_ms)
      : ProcessSubject(c), warmup_(warmup), schedtrace_ms_(schedtrace_ms) {}
  Measurement measure(Workload& w, bool traced) override;

 private:
  const unsigned warmup_;
  const unsigned schedtrace_ms_;
};

}  // namespace schedlab
