// runner_repetition.cpp: see runner_repetition.hpp; BlockRepetition measures the cases and
// turns their measurements into rows (CSV, latency file, the case's result, the timeline).
#include "runner_repetition.hpp"

#include <chrono>
#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "csv.hpp"
#include "latency_file.hpp"
#include "machine_load.hpp"
#include "row.hpp"
#include "sidecar.hpp"
#include "speed_probe.hpp"

namespace schedlab::runner {

namespace {

// One repetition of a block: every case once, in the order given, between two probes of the
// CPUs' speed. Rows are written when the repetition ends (or stops early), because the machine's
// load and speed they carry are the whole repetition's, each on the CPUs its own case ran on
// (machine_load.hpp, speed_probe.hpp): the unit the claims compare within.
class BlockRepetition {
 public:
  BlockRepetition(RunState& run, const Block& block, unsigned rep)
      : run_(run), block_(block), rep_(rep), probe_before_(run.probe.start()) {}
  // When a case failed or a stop came, the cases measured before it keep their rows; an error
  // writing them is dropped here, the one already propagating says what went wrong first.
  ~BlockRepetition() {
    try {
      write();
    } catch (const std::exception&) {
    }
  }

  // Whether a row of the repetition was flagged slow_cpu or noisy (the claims leave such rows
  // out, and the block earns a replacement); after write().
  bool flagged() const { return flagged_ > 0; }

  void measure(LiveCase& l, Subject& subject) {
    load_.case_begin();
    Measurement m = subject.measure(*l.workload, /*traced=*/rep_ == 0);
    load_.case_end(case_cpus(*l.c, run_.usable));
    measured_.emplace_back(&l, std::move(m));
    ++run_.done;
  }

  // Writes the rows of the cases measured so far. Throws std::runtime_error if the CSV cannot be
  // written.
  // Each row leaves the list once written, so that a retry after a failed write (the destructor's)
  // writes none twice.
  void write() {
    if (measured_.empty()) return;
    if (!probe_after_) {
      load_.finish();
      const std::size_t probes_before_end = run_.probe.points().size();  // the usual change: before this block's end
      probe_after_ = run_.probe.end();
      unsigned noisy = 0, slow = 0;
      for (auto& [l, m] : measured_) {
        const std::vector<unsigned> cpus = case_cpus(*l->c, run_.usable);
        m.machine = load_.on(cpus);
        const SpeedVerdict speed = SpeedProbe::verdict(
            probe_before_, *probe_after_, cpus, SpeedProbe::usual_change(run_.probe.points(), probes_before_end, cpus));
        m.machine.probe_change = speed.change;
        m.machine.probe_usual = speed.usual;
        m.machine.probe_spread = speed.spread;
        if (!std::isnan(speed.together)) m.machine.probe_together = speed.together;
        m.machine.slow_cpu = speed.slow;
        noisy += m.machine.noisy.value_or(false);
        slow += speed.slow;
        flagged_ += m.machine.flagged();
      }
      run_.probe.count_block(flagged_ > 0);
      run_.timeline.add_block(load_.started_unix_s(), load_.duration_s(), load_.other_share_per_cpu(), probe_before_,
                              *probe_after_, static_cast<unsigned>(measured_.size()), noisy, slow);
    }
    set_reference_times();
    while (!measured_.empty()) {
      auto& [l, m] = measured_.front();
      m.facts = l->facts;
      const RowContext row{run_.out.sidecar().run_id(), run_.request.preset, *l->c, block_.index, rep_, m};
      run_.out.csv().write_row(row_cells(row));
      if (LatencyFile* latency = run_.out.latency()) latency->write(row);
      l->result.wall_ns.push_back(m.wall_ns);
      l->result.reps.push_back(rep_);
      l->result.tasks = m.tasks ? static_cast<double>(*m.tasks) : NAN;
      measured_.erase(measured_.begin());
    }
  }

 private:
  // The times each row is compared with in this repetition (Measurement::elision_ns,
  // one_thread_ns): the elision's, and the same variant's at 1 thread, both of the row's own
  // build (an A/B run measures every case once per build). A variant is a scheduler with its
  // parameters; simulated rows take part in neither.
  void set_reference_times() {
    for (auto& [l, m] : measured_) {
      if (l->c->simulated) continue;
      for (const auto& [other, om] : measured_) {
        if (other->c->simulated || other->c->build != l->c->build) continue;
        if (other->c->scheduler->elision()) m.elision_ns = om.wall_ns;
        if (other->c->threads == 1 && other->c->scheduler == l->c->scheduler &&
            other->c->scheduler_params == l->c->scheduler_params) {
          m.one_thread_ns = om.wall_ns;
        }
      }
    }
  }

  RunState& run_;
  const Block& block_;
  const unsigned rep_;
  const SpeedProbe::Point probe_before_;
  BlockLoad load_;  // after probe_before_: the probe is no part of the block's accounting
  std::optional<SpeedProbe::Point> probe_after_;  // set when the repetition's rows are first written
  unsigned flagged_ = 0;  // its rows flagged
  std::vector<std::pair<LiveCase*, Measurement>> measured_;
};

}  // namespace

bool run_repetition(RunState& run, SubjectCache& subjects, Block& b, const std::vector<LiveCase*>& order,
                    unsigned rep) {
  const auto start = std::chrono::steady_clock::now();
  BlockRepetition repetition(run, b, rep);
  for (LiveCase* l : order) {
    if (g_stop_requested.load()) return false;
    const Case& c = *l->c;
    run.progress.update(run.done, c.label() + (rep < run.request.reps ? " rep " : " replacement rep ") +
                                      std::to_string(rep + 1) + "/" + std::to_string(run.request.reps));
    repetition.measure(*l, subjects.live_subject(*l));
  }
  repetition.write();
  if (repetition.flagged()) ++b.flagged;
  b.last_repetition_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return true;
}

}  // namespace schedlab::runner
