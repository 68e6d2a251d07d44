// summary.cpp: the table `schedlab run` prints when it finishes, in the manner of hyperfine: a
// centre and a spread per case, a mark on cases whose repetitions cannot be trusted alone, and
// "A ran 1.31× [1.22, 1.40] faster than B" for the comparisons the suite is built around, paired
// by repetition as the claims are (paired.hpp). The table is a list of columns (table_columns):
// a new column is one entry there.
#include "summary.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "paired.hpp"
#include "registry.hpp"

namespace schedlab {
namespace {

// A case is marked noisy when its repetitions' coefficient of variation (sample standard
// deviation over mean) is above this: at that spread an effect of 10%, the smallest most claims
// count (criteria.toml's min_effect), is within the noise of a single repetition. The same rule
// as report.html's medians table (scripts/schedlab_results/report.py, NOISY_CV).
constexpr double kNoisyCv = 0.10;
// A case is marked short when its median is under this: the timer, the pools' first touch and
// the run's start-up then weigh as much as the scheduling measured (report.py's SHORT_NS).
constexpr double kShortNs = 1e6;
// Every case is compared with this scheduler at its defaults, run in the same block at the same
// thread count: Go's design, the b side of nearly every claim (criteria.toml). Where it did not
// run, the first scheduler at its defaults in the run's order takes its place. A variant with
// parameters off their defaults is compared with its own scheduler at its defaults too (the
// presets' sweeps: order, handoff, steal-amount...). "At its defaults" is about the design:
// the parameters that set up the machine (pinning, the A/A replica label: Case::design) may
// take any value, and a reference with the same machine settings as the case is preferred. So a
// preset that pins every case compares pinned cases with each other, and go-runtime, which
// cannot be pinned, with the pinned reference, as it ran (the legend says so).
const std::string kReference = "steal-half";

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Sample standard deviation (n - 1); NaN for fewer than two values.
double standard_deviation(const std::vector<double>& v) {
  if (v.size() < 2) return NAN;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double squares = 0;
  for (double x : v) squares += (x - mean) * (x - mean);
  return std::sqrt(squares / static_cast<double>(v.size() - 1));
}

std::string format_double(double v, int precision) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

std::string workload_key(const CaseResult& r) {
  return r.c.workload->name + "(" + describe(r.c.workload->params, r.c.workload_params) + ")";
}

// One case's figures, computed once for every column.
struct CaseStats {
  const CaseResult* r;
  double median_ns, sd_ns, cv;
  double elision_ns, tbb_ns;  // the references' medians, NaN when not run
  std::string vs_best_peer;  // vs_best_peer()'s cell
};

// Whether `o` has times to compare `r` with: it ran, on the same workload configuration (at the
// same thread count if `same_threads`). A simulated case is compared only with simulated ones
// (Valgrind's times are not a native run's).
bool comparable(const CaseResult& o, const CaseResult& r, bool same_threads) {
  return !o.wall_ns.empty() && workload_key(o) == workload_key(r) && o.c.simulated == r.c.simulated &&
         (!same_threads || o.c.threads == r.c.threads);
}

bool at_defaults(const CaseResult& r) { return r.c.design() == r.c.scheduler->name; }

// Of the cases `pick` accepts, the one with r's machine settings, else the first; null if none.
template <class Pick>
const CaseResult* preferring_setup_of(const std::vector<CaseResult>& results, const CaseResult& r, Pick pick) {
  const CaseResult* first = nullptr;
  for (const CaseResult& o : results) {
    if (!pick(o)) continue;
    if (same_machine_setup(o.c, r.c)) return &o;
    if (first == nullptr) first = &o;
  }
  return first;
}

// The median time of `scheduler` at its defaults where comparable() with r (the same machine
// settings preferred), NaN when it was not run.
double reference(const std::vector<CaseResult>& results, const CaseResult& r, const std::string& scheduler,
                 bool same_threads) {
  const CaseResult* o = preferring_setup_of(results, r, [&](const CaseResult& o) {
    return o.c.scheduler->name == scheduler && at_defaults(o) && comparable(o, r, same_threads);
  });
  return o == nullptr ? NAN : median(o->wall_ns);
}

// The fastest peer (registry.hpp: SchedulerEntry::peer) comparable() with r at the same threads:
// "ratio (name)" of r's median to its median, "-" when no peer ran.
std::string vs_best_peer(const std::vector<CaseResult>& results, const CaseResult& r, double med) {
  const CaseResult* best = nullptr;
  double best_med = NAN;
  for (const CaseResult& o : results) {
    if (!o.c.scheduler->peer || !comparable(o, r, /*same_threads=*/true)) continue;
    const double m = median(o.wall_ns);
    if (best == nullptr || m < best_med) {
      best = &o;
      best_med = m;
    }
  }
  if (best == nullptr) return "-";
  return format_double(med / best_med, 2) + " (" + best->c.variant() + ")";
}

CaseStats stats_of(const std::vector<CaseResult>& results, const CaseResult& r) {
  const double med = median(r.wall_ns);
  const double sd = standard_deviation(r.wall_ns);
  const double mean = std::accumulate(r.wall_ns.begin(), r.wall_ns.end(), 0.0) / static_cast<double>(r.wall_ns.size());
  return {&r, med, sd, sd / mean, reference(results, r, kElisionName, false), reference(results, r, "tbb", true),
          vs_best_peer(results, r, med)};
}

std::string marks(const CaseStats& s) {
  std::string m;
  if (s.cv > kNoisyCv) m += "noisy";
  if (s.median_ns < kShortNs) m += m.empty() ? "short" : ",short";
  return m;
}

// A column of the table: its header, its alignment and its cell for a case. Widths follow the
// widest cell.
struct SummaryColumn {
  std::string header;
  bool left;
  std::function<std::string(const CaseStats&)> cell;
};

std::string or_dash(double v, const std::function<std::string(double)>& format) {
  return std::isnan(v) ? std::string("-") : format(v);
}

std::vector<SummaryColumn> table_columns() {
  return {
      {"workload", true, [](const CaseStats& s) { return workload_key(*s.r); }},
      {"scheduler", true, [](const CaseStats& s) { return s.r->c.variant() + (s.r->c.simulated ? " [sim]" : ""); }},
      {"threads", false, [](const CaseStats& s) { return std::to_string(s.r->c.threads); }},
      {"median ms", false, [](const CaseStats& s) { return format_double(s.median_ns / 1e6, 2); }},
      {"± sd ms", false,
       [](const CaseStats& s) { return or_dash(s.sd_ns, [](double v) { return "± " + format_double(v / 1e6, 2); }); }},
      {"ns/task", false,
       [](const CaseStats& s) {
         return or_dash(s.r->tasks, [&s](double t) { return format_double(s.median_ns / t, 1); });
       }},
      {"vs elision", false,
       [](const CaseStats& s) {
         return or_dash(s.elision_ns, [&s](double v) { return format_double(v / s.median_ns, 2) + "x"; });
       }},
      {"vs tbb", false,
       [](const CaseStats& s) { return or_dash(s.tbb_ns, [&s](double v) { return format_double(s.median_ns / v, 2); }); }},
      {"vs best peer", true, [](const CaseStats& s) { return s.vs_best_peer; }},
      {"", true, [](const CaseStats& s) { return marks(s); }},
  };
}

// Characters, not bytes: UTF-8's continuation bytes (as in "±") take no room.
std::size_t display_width(const std::string& text) {
  return text.size() - std::count_if(text.begin(), text.end(), [](char b) { return (b & 0xC0) == 0x80; });
}

// The columns, two spaces apart, each as wide as its widest cell; trailing blanks trimmed.
std::string table(const std::vector<CaseResult>& results) {
  const std::vector<SummaryColumn> columns = table_columns();
  std::vector<std::vector<std::string>> rows(1);
  for (const SummaryColumn& c : columns) rows[0].push_back(c.header);
  for (const CaseResult& r : results) {
    if (r.wall_ns.empty()) continue;
    const CaseStats s = stats_of(results, r);
    rows.emplace_back();
    for (const SummaryColumn& c : columns) rows.back().push_back(c.cell(s));
  }
  std::vector<std::size_t> width(columns.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));
  }
  std::ostringstream out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - display_width(row[i]), ' ');
      line += (i == 0 ? "" : "  ") + (columns[i].left ? row[i] + pad : pad + row[i]);
    }
    out << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
  }
  return out.str();
}

// "steal-half ran 1.31× [1.22, 1.40] faster than central": the Hodges-Lehmann estimate of the
// time ratio over the repetitions both ran (log ratios, paired by rep within their block), the
// faster named first. Empty when they share no repetition.
std::string comparison(const CaseResult& a, const CaseResult& b) {
  std::map<unsigned, double> b_by_rep;
  for (std::size_t i = 0; i < b.reps.size(); ++i) b_by_rep[b.reps[i]] = b.wall_ns[i];
  std::vector<double> log_ratios;  // log(b / a): above 0 when a is faster
  for (std::size_t i = 0; i < a.reps.size(); ++i) {
    if (auto it = b_by_rep.find(a.reps[i]); it != b_by_rep.end()) log_ratios.push_back(std::log(it->second / a.wall_ns[i]));
  }
  if (log_ratios.empty()) return "";
  Estimate e = hodges_lehmann(log_ratios);
  const bool a_faster = e.centre >= 0;
  if (!a_faster) e = {-e.centre, -e.high, -e.low};
  std::string text = (a_faster ? a : b).c.variant() + " ran " + format_double(std::exp(e.centre), 2) + "×";
  if (std::isfinite(e.low) && std::isfinite(e.high)) {
    text += " [" + format_double(std::exp(e.low), 2) + ", " + format_double(std::exp(e.high), 2) + "]";
  }
  text += " faster than " + (a_faster ? b : a).c.variant();
  if (std::isfinite(e.low) && e.low <= 0) text += "  (interval includes 1×: no clear difference)";
  return text;
}

bool same_group(const CaseResult& a, const CaseResult& b) {
  return a.block == b.block && a.c.threads == b.c.threads && !b.wall_ns.empty();
}

// The case the others of r's block and thread count are compared with (see kReference), other
// than r itself; null when none ran at its defaults.
const CaseResult* group_reference(const std::vector<CaseResult>& results, const CaseResult& r) {
  const auto candidate = [&](const CaseResult& o) { return &o != &r && same_group(r, o) && at_defaults(o); };
  if (const CaseResult* o = preferring_setup_of(
          results, r, [&](const CaseResult& o) { return candidate(o) && o.c.scheduler->name == kReference; })) {
    return o;
  }
  // The reference itself is compared with nothing else in its place.
  if (at_defaults(r) && r.c.scheduler->name == kReference) return nullptr;
  return preferring_setup_of(results, r, candidate);
}

// The cases `r` is compared with: its group's reference, and its own scheduler at its defaults;
// in an A/B run (--against), the same case measured by build A (served_subject.hpp).
std::vector<const CaseResult*> partners(const std::vector<CaseResult>& results, const CaseResult& r) {
  std::vector<const CaseResult*> out;
  if (!r.c.build.empty()) {
    for (const CaseResult& o : results) {
      if (&o != &r && o.c.build == kBuildA && r.c.build != kBuildA && same_group(r, o) &&
          o.c.scheduler == r.c.scheduler && o.c.scheduler_params == r.c.scheduler_params) {
        out.push_back(&o);
      }
    }
    return out;
  }
  const CaseResult* reference = group_reference(results, r);
  if (reference != nullptr) out.push_back(reference);
  const CaseResult* own = preferring_setup_of(results, r, [&](const CaseResult& o) {
    return &o != &r && &o != reference && same_group(r, o) && at_defaults(o) && o.c.scheduler == r.c.scheduler;
  });
  if (own != nullptr) out.push_back(own);
  return out;
}

std::string comparisons(const std::vector<CaseResult>& results) {
  std::ostringstream out;
  std::string heading;
  std::set<std::pair<const CaseResult*, const CaseResult*>> said;  // each pair once, whichever side found it
  for (const CaseResult& r : results) {
    if (r.wall_ns.empty()) continue;
    for (const CaseResult* o : partners(results, r)) {
      if (!said.insert({std::min<const CaseResult*>(o, &r), std::max<const CaseResult*>(o, &r)}).second) continue;
      const std::string line = comparison(*o, r);
      if (line.empty()) continue;
      const std::string group = workload_key(r) + (r.c.simulated ? " [sim]" : "") + ", " +
                                std::to_string(r.c.threads) + (r.c.threads == 1 ? " thread" : " threads");
      if (group != heading) out << (heading = group) << ":\n";
      out << "  " << line << "\n";
    }
  }
  if (out.str().empty()) return "";
  const bool ab = std::any_of(results.begin(), results.end(), [](const CaseResult& r) { return !r.c.build.empty(); });
  if (ab) {
    return "\nComparisons (each case's build B and A2 with its build A, in the same blocks: B / A is the other build's "
           "effect, A2 / A this run's noise floor; scripts/compare on the CSV judges one against the other):\n" +
           out.str();
  }
  return "\nComparisons (each case with " + kReference +
         " or, where it did not run, the first scheduler run; and with its own scheduler's defaults):\n" + out.str();
}

// The peers' names, comma-separated, for the legend.
std::string peer_list() {
  std::string peers;
  for (const std::string& p : peer_names()) peers += (peers.empty() ? "" : ", ") + p;
  return peers;
}

// The legend, and why intervals may be missing.
std::string notes(const std::vector<CaseResult>& results) {
  const bool simulated = std::any_of(results.begin(), results.end(), [](const CaseResult& r) { return r.c.simulated; });
  std::size_t most_reps = 0;
  for (const CaseResult& r : results) most_reps = std::max(most_reps, r.reps.size());
  std::ostringstream out;
  out << "\nmedian ± sd: median and standard deviation of the repetitions; vs elision: speedup over the sequential "
         "elision, the program with every spawn a plain call (higher is better; '-' without --scheduler elision); "
         "vs tbb: time relative to oneTBB at the same threads (lower is better)\n"
      << "vs best peer: time relative to the fastest peer at the same threads, named in brackets (lower is better; "
         "peers are the runtimes a user would pick instead: "
      << peer_list() << ")\n"
      << "noisy: repetitions spread with CV above " << kNoisyCv * 100
      << "% (a 10% effect is within one repetition's noise); short: median under 1 ms (timer and start-up "
         "dominate; use a larger size)\n"
      << "ran N× [low, high]: Hodges-Lehmann estimate of the time ratio with its 95% interval over the paired "
         "repetitions, as the claims compute it\n";
  if (most_reps > 0 && std::isinf(hodges_lehmann(std::vector<double>(most_reps, 0.0)).low)) {
    out << "no intervals: " << most_reps << " repetitions cannot give a 95% interval; run 6 or more (--reps)\n";
  }
  if (simulated) {
    out << "[sim]: run under Valgrind's cache simulator; its times are Valgrind's and are compared only with other "
           "[sim] rows\n";
  }
  // Cases set up differently (one pinned, one not) are still compared, as they ran: say so.
  std::set<std::string> unlike;
  for (const CaseResult& r : results) {
    for (const CaseResult* o : partners(results, r)) {
      if (!same_machine_setup(o->c, r.c)) unlike.insert(r.c.variant() + " with " + o->c.variant());
    }
  }
  if (!unlike.empty()) {
    std::string pairs;
    for (const std::string& pair : unlike) pairs += (pairs.empty() ? "" : "; ") + pair;
    out << "compared as they ran, with different machine settings (pinning, --replica; go-runtime cannot be "
           "pinned): "
        << pairs << "\n";
  }
  return out.str();
}

}  // namespace

std::string summary_table(const std::vector<CaseResult>& results) {
  return table(results) + comparisons(results) + notes(results);
}

}  // namespace schedlab
