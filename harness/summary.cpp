#include "summary.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "registry.hpp"

namespace schedlab {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string format_double(double v, int precision) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

std::string workload_key(const CaseResult& r) {
  return r.c.workload->name + "(" + describe(r.c.workload->params, r.c.workload_params) + ")";
}

// The median time of `variant` on the same workload configuration (at the same thread count
// if `same_threads`), NaN when it was not run. A simulated case is compared only with simulated
// ones (Valgrind's times are not a native run's).
double reference(const std::vector<CaseResult>& results, const CaseResult& r, const std::string& variant,
                 bool same_threads) {
  for (const CaseResult& o : results) {
    if (o.c.variant() == variant && workload_key(o) == workload_key(r) && o.c.simulated == r.c.simulated &&
        (!same_threads || o.c.threads == r.c.threads) && !o.wall_ns.empty()) {
      return median(o.wall_ns);
    }
  }
  return NAN;
}

// The fastest peer (registry.hpp: SchedulerEntry::peer) on the same workload configuration at
// the same threads, simulated only with simulated (as reference()): "ratio (name)" of r's median
// to its median, "-" when no peer ran.
std::string vs_best_peer(const std::vector<CaseResult>& results, const CaseResult& r, double med) {
  const CaseResult* best = nullptr;
  double best_med = NAN;
  for (const CaseResult& o : results) {
    if (!o.c.scheduler->peer || o.wall_ns.empty() || o.c.threads != r.c.threads ||
        o.c.simulated != r.c.simulated || workload_key(o) != workload_key(r)) {
      continue;
    }
    const double m = median(o.wall_ns);
    if (best == nullptr || m < best_med) {
      best = &o;
      best_med = m;
    }
  }
  if (best == nullptr) return "-";
  return format_double(med / best_med, 2) + " (" + best->c.variant() + ")";
}

}  // namespace

std::string summary_table(const std::vector<CaseResult>& results) {
  std::ostringstream out;
  bool simulated = false;
  out << std::left << std::setw(34) << "workload" << " " << std::setw(22) << "scheduler" << std::right
      << std::setw(8) << "threads" << std::setw(12) << "median ms" << std::setw(11) << "ns/task"
      << std::setw(13) << "vs serial" << std::setw(10) << "vs tbb" << "  " << std::left << "vs best peer" << "\n";
  for (const CaseResult& r : results) {
    if (r.wall_ns.empty()) continue;
    const double med = median(r.wall_ns);
    const double serial = reference(results, r, "serial", false);
    const double tbb = reference(results, r, "tbb", true);
    simulated = simulated || r.c.simulated;
    out << std::left << std::setw(34) << workload_key(r) << " " << std::setw(22)
        << r.c.variant() + (r.c.simulated ? " [sim]" : "")
        << std::right << std::setw(8) << r.c.threads << std::setw(12) << format_double(med / 1e6, 2)
        << std::setw(11) << (std::isnan(r.tasks) ? "-" : format_double(med / r.tasks, 1)) << std::setw(13)
        << (std::isnan(serial) ? "-" : format_double(serial / med, 2) + "x") << std::setw(10)
        << (std::isnan(tbb) ? "-" : format_double(med / tbb, 2)) << "  " << vs_best_peer(results, r, med)
        << "\n";
  }
  std::string peers;
  for (const std::string& p : peer_names()) peers += (peers.empty() ? "" : ", ") + p;
  out << "vs serial: speedup over the sequential elision (higher is better); "
         "vs tbb: time relative to oneTBB at the same threads (lower is better);\n"
         "vs best peer: time relative to the fastest peer at the same threads, named in brackets "
         "(lower is better; peers are the runtimes a user would pick instead: " << peers << ")\n";
  if (simulated) {
    out << "[sim]: run under Valgrind's cache simulator; its times are Valgrind's and are compared only with other "
           "[sim] rows\n";
  }
  return out.str();
}

}  // namespace schedlab
