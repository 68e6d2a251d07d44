// report.cpp: `schedlab counters`, for a user deciding whether --counters will measure anything
// here: the library and kernel state that decide it, every column with each candidate and why
// it is or is not usable, and a check that this thread can count another one, as runs do; then
// the simulated and modelled back ends: whether Valgrind is here, the geometry a run would use,
// their columns and what the simulator sees.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ostream>
#include <thread>

#include "counters/cache_geometry.hpp"
#include "counters/columns.hpp"
#include "counters/hw_counters.hpp"
#include "counters/kernel_events.hpp"
#include "counters/probe.hpp"
#include "counters/sim.hpp"
#include "params.hpp"
#include "row.hpp"

namespace schedlab {
namespace counters {
namespace {

constexpr int kHelperSleeps = 50;

// PAPI's state, perf_event_paranoid, and whether the kernel exposes a PMU.
void print_setup(std::ostream& out, const Probe& p) {
  out << "Hardware and kernel event counters (--counters)\n";
  out << "  " << p.papi.init << "\n";
  if (p.papi.ok) {
    out << "  PAPI perf_event component: "
        << (p.papi.perf_disabled.empty() ? "enabled" : "disabled: " + p.papi.perf_disabled)
        << "; hardware counters: " << p.papi.hw_counters << "\n";
    out << "  PAPI_set_domain(PAPI_DOM_ALL): " << (p.papi.domain_all ? "ok" : "refused")
        << "; multiplexing support: " << (p.papi.multiplex_ok ? "ok" : "unavailable") << "\n";
  }
  out << "  /proc/sys/kernel/perf_event_paranoid: "
      << (p.paranoid < 0 ? std::string("unreadable (no perf_event support?)")
                         : std::to_string(p.paranoid))
      << (geteuid() == 0 ? " (running as root)" : " (not root)") << "\n";
  out << "  hardware PMU exposed by the kernel: " << (cpu_pmu_exposed() ? "yes" : "no") << "\n\n";
}

// One column: whether it is available, what it counts, and every candidate tried.
void print_column(std::ostream& out, const HwEvent& e, const ProbedEvent& probed,
                  const CounterAvailability& a) {
  out << "  " << a.column << std::string(a.column.size() < 24 ? 24 - a.column.size() : 1, ' ')
      << (a.available ? "available    " + a.event : std::string("unavailable")) << "\n";
  out << "      " << e.what << (e.hardware ? " [hardware]" : " [software]") << "\n";
  for (const Tried& t : probed.tried) {
    out << "      " << t.name << ": " << (t.ok ? "usable" : t.reason) << "\n";
  }
  // The reason, unless it is just the candidates' reasons printed above: the probe refused the
  // event, or the plan did (it cannot be counted together with the others).
  const bool reasons_above = !probed_available(probed) && probed.refused.empty();
  if (!a.available && !reasons_above) out << "      => " << a.reason << "\n";
  if (a.available && !a.reason.empty()) out << "      note: " << a.reason << "\n";
}

// Third-party counting, as the harness does it: this thread counts a helper thread that
// sleeps kHelperSleeps times.
void print_third_party_check(std::ostream& out) {
  out << "\n  counting another thread (attach by tid): ";
  HwCounters sw(parse_counter_selection("perf_context_switches"));
  if (!sw.availability()[0].available) {
    out << "not checked (context switches unavailable)\n";
    return;
  }
  std::atomic<pid_t> tid{0};
  std::atomic<bool> go{false};
  std::thread helper([&] {
    tid = this_tid();
    while (!go) std::this_thread::yield();
    for (int i = 0; i < kHelperSleeps; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  while (tid == 0) std::this_thread::yield();
  sw.start({tid.load()});
  go = true;
  helper.join();
  const auto v = sw.stop();
  out << (v[0].second ? "works (" + std::to_string(*v[0].second) + " context switches over " +
                            std::to_string(kHelperSleeps) + " sleeps)"
                      : std::string("failed"))
      << "\n";
}

// The schema's columns of one group (row.cpp is their one home), with their meanings.
void print_schema_columns(std::ostream& out, const std::string& group) {
  for (const Column& c : columns()) {
    if (c.group == group) out << "  " << c.name << "\n      " << c.meaning << "\n";
  }
}

void print_cache_back_ends(std::ostream& out, const std::string& sim_l1, const std::string& sim_ll) {
  out << "\nSimulated cache counters (--counters sim)\n";
  if (const auto why = simulator_unavailable()) {
    out << "  unavailable: " << *why << "\n";
  } else {
    out << "  available    " << valgrind_program() << " (" << valgrind_version()
        << "), --tool=callgrind --cache-sim=yes, one child process per repetition\n";
  }
  try {
    const SimGeometry g = resolve_sim_geometry(sim_l1, sim_ll);
    out << "  geometry (SIZE,ASSOC,LINE; --sim-l1, --sim-ll override D1, LL):\n"
        << "      I1 " << g.i1.text() << "  from " << g.i1_from << "\n"
        << "      D1 " << g.d1.text() << "  from " << g.d1_from << "\n"
        << "      LL " << g.ll.text() << "  from " << g.ll_from << " (the per-core L2: the core's own cache)\n";
  } catch (const ParamError& e) {
    out << "  geometry: none: " << e.what() << "\n";
  }
  print_schema_columns(out, "simulated");
  out << "  what the simulator sees: " << kSimulatorSees << "\n";
  out << "\nModelled L2 misses (--counters model): a model, not a measurement; geometry: LL above\n";
  print_schema_columns(out, "model");
}

}  // namespace
}  // namespace counters

int print_counter_report(std::ostream& out, const std::string& sim_l1, const std::string& sim_ll) {
  const counters::Probe& p = counters::probe();
  counters::print_setup(out, p);
  const HwCounters all(parse_counter_selection("default"));
  for (std::size_t i = 0; i < hw_events().size(); ++i) {
    counters::print_column(out, hw_events()[i], p.events[i], all.availability()[i]);
  }
  counters::print_third_party_check(out);
  out << "  multiplexing for the default selection: " << (all.multiplexed() ? "yes" : "no") << "\n";
  out << "  scope: " << counters::kScope << "\n";
  counters::print_cache_back_ends(out, sim_l1, sim_ll);
  return 0;
}

}  // namespace schedlab
