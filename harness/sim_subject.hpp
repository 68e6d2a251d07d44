// sim_subject.hpp: the Subject of a simulated case (`--counters sim`): each repetition is a
// child process, schedlab itself under Valgrind's cache simulator (counters/sim.hpp).
//
//   parent: SimSubject::measure ──spawn──► valgrind --tool=callgrind --cache-sim=yes ...
//             /proc/self/exe simulated-repetition --request JSON --out FILE
//   child:  build the case, prepare, warm up, then ONE measured repetition through the same
//           InProcessSubject protocol as a native run, its region bracketed by callgrind's
//           client requests; check, tear down, write the Measurement as JSON
//   parent: the child's Measurement + the region's counts from callgrind's dump
//
// A repetition is a fresh process, so the runner's blocks and shuffled order work as for any
// case; the warm-up runs inside every child (a new process starts cold). The child's wall time
// is Valgrind's (tens of times slower than native): the row is marked `simulated`, and plots and
// claims never compare its time.
#pragma once

#include <string>
#include <vector>

#include "counters/cache_geometry.hpp"
#include "measure.hpp"
#include "plan.hpp"

namespace schedlab {

// What every simulated repetition of a run shares. The child counts no hardware or kernel
// events: under Valgrind they would be Valgrind's own (its translated code, its threads).
struct SimSettings {
  SimGeometry geometry;
  unsigned warmup = 1;  // untimed runs in the child before the measured one
};

class SimSubject final : public ProcessSubject {
 public:
  SimSubject(const Case& c, SimSettings settings) : ProcessSubject(c), settings_(std::move(settings)) {}
  // Throws std::runtime_error carrying the child's own error (wrong result, task count) or
  // naming what failed (Valgrind missing, killed, no dump).
  Measurement measure(Workload& w, bool traced) override;

 private:
  const SimSettings settings_;
};

// The child: `schedlab simulated-repetition --request JSON --out FILE`. Runs the request's case
// as described above and writes its Measurement to `out_path`. Throws ParamError for a request
// that names no known case, std::runtime_error when the run fails.
void run_simulated_repetition(const std::string& request_json, const std::string& out_path);

}  // namespace schedlab
