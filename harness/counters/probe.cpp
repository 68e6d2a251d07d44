// probe.cpp: the probe (probe.hpp). Each candidate is tried with the steps the workers' counters
// will take; then the software events chosen are counted on this thread over sleeps and page
// touches, because an event can be set up and still read 0: an unavailable column is reported
// with its reason, never written as 0 into every row.
#include "counters/probe.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include "counters/hw_counters.hpp"
#include "counters/kernel_events.hpp"
#include "counters/thread_counters.hpp"

namespace schedlab::counters {

std::string event_label(const ProbedEvent& p) {
  if (p.chosen < 0) return "";
  std::string s = p.tried[p.chosen].name;
  if (p.exclude_kernel) s += ":u";
  return s;
}

bool probed_available(const ProbedEvent& p) { return p.chosen >= 0 && p.refused.empty(); }

std::string probed_reason(const ProbedEvent& p) {
  if (probed_available(p)) return "";
  if (!p.refused.empty()) return p.refused;
  std::string s;
  for (const Tried& t : p.tried) s += (s.empty() ? "" : "; ") + t.name + ": " + t.reason;
  return s;
}

namespace {

// What the probe thread does while its software events count.
constexpr int kProbeSleeps = 5;
constexpr std::size_t kProbePages = 16;

// Columns that cannot read 0 after the probe thread's sleeps and, when it could map them, page
// touches.
bool cannot_read_zero(const std::string& column, bool pages_touched) {
  return column == "perf_context_switches" || (column == "perf_page_faults" && pages_touched);
}

// Context switches (each sleep) and page faults (each fresh page touched) on this thread. False
// when the pages could not be mapped: then no page fault was owed.
bool sleep_and_touch_pages() {
  for (int i = 0; i < kProbeSleeps; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* m =
      mmap(nullptr, page * kProbePages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return false;
  for (std::size_t i = 0; i < kProbePages; ++i) static_cast<volatile char*>(m)[i * page] = 1;
  munmap(m, page * kProbePages);
  return true;
}

// The plan's counts on this thread over sleep_and_touch_pages(), one per planned column.
struct ProbeCounts {
  bool failed = false;  // counting could not be set up or started: `error` says why
  std::string error;
  bool pages_touched = false;
  std::vector<long long> sum;
  std::vector<bool> lost;
};

ProbeCounts count_on_this_thread(const Plan& plan, std::size_t columns) {
  ProbeCounts c;
  ThreadCounters::Status status;
  auto t = ThreadCounters::open(plan, this_tid(), &status, &c.error);
  c.sum.assign(columns, 0);
  c.lost.assign(columns, false);
  c.failed = !t || !t->start(&c.error);
  if (!c.failed) {
    c.pages_touched = sleep_and_touch_pages();
    bool scaled = false;
    std::vector<std::string> notes;
    t->stop(plan, c.sum, c.lost, &scaled, notes);
  }
  return c;
}

// The refusal of a software event whose back end read 0 where it cannot (`read_zero`: this
// event itself did).
std::string zero_refusal(const Probe& probe, const ProbedEvent& p, bool read_zero) {
  const std::string why = "kernel-side counting is refused (" + privilege_text() +
                          (p.backend == Backend::papi && !probe.papi.domain_all
                               ? "; PAPI_set_domain(PAPI_DOM_ALL) was refused"
                               : "") +
                          ")";
  return event_label(p) +
         (read_zero ? " read 0 on a probe thread that slept " + std::to_string(kProbeSleeps) +
                          " times and touched " + std::to_string(kProbePages) + " fresh pages: "
                    : " not trusted: context switches or page faults of the same back end read 0 "
                      "where they cannot: ") +
         why;
}

// Software events are counted in the kernel. Where the kernel refuses kernel-side counting
// (perf_event_paranoid >= 2 for a non-root user, PAPI's user domain) they add fine and then
// read 0. Count them on this thread over a few sleeps and fresh page touches; one that reads 0
// is refused rather than written as 0 into every row.
void check_software_events(Probe& probe) {
  const std::vector<HwEvent>& events = hw_events();
  std::vector<std::size_t> sw;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!events[i].hardware && probed_available(probe.events[i])) sw.push_back(i);
  }
  if (sw.empty()) return;
  std::vector<std::string> refused(sw.size());
  const Plan plan = make_plan(probe, sw, refused);
  const ProbeCounts counts = count_on_this_thread(plan, sw.size());
  // Which back ends read 0 on an event that cannot be 0 after sleeping and faulting.
  std::set<Backend> zero_backends;
  std::vector<bool> read_zero(sw.size(), false);
  for (std::size_t k = 0; k < sw.size(); ++k) {
    read_zero[k] = cannot_read_zero(events[sw[k]].column, counts.pages_touched) && counts.sum[k] == 0;
    if (read_zero[k]) zero_backends.insert(probe.events[sw[k]].backend);
  }
  for (std::size_t k = 0; k < sw.size(); ++k) {
    ProbedEvent& p = probe.events[sw[k]];
    if (counts.failed) {
      p.refused = "counting on a thread failed: " + counts.error;
    } else if (!refused[k].empty()) {
      p.refused = refused[k];
    } else if (counts.lost[k]) {
      p.refused = event_label(p) + ": the probe's count could not be read";
    } else if (zero_backends.count(p.backend)) {
      p.refused = zero_refusal(probe, p, read_zero[k]);
    }
  }
}

// Tries the column's candidates in order and chooses the first that can count.
ProbedEvent probe_column(const PapiState& papi, const HwEvent& column) {
  ProbedEvent p;
  for (const std::string& cand : column.candidates) {
    const KernelEvent* k = find_kernel_event(cand);
    const bool kernel = is_kernel_candidate(cand);
    bool exclude_kernel = false;
    Tried t;
    if (kernel) {
      t = try_kernel(cand, k, &exclude_kernel);
    } else {
      std::lock_guard lock(g_papi_mutex);
      t = try_papi(papi, cand);
    }
    p.tried.push_back(t);
    if (t.ok) {
      p.chosen = static_cast<int>(p.tried.size()) - 1;
      p.backend = kernel ? Backend::kernel : Backend::papi;
      p.kev = k;
      p.exclude_kernel = exclude_kernel;
      break;
    }
  }
  return p;
}

Probe run_probe() {
  Probe probe;
  probe.paranoid = perf_event_paranoid();
  {
    std::lock_guard lock(g_papi_mutex);
    probe.papi = init_papi();
  }
  for (const HwEvent& e : hw_events()) probe.events.push_back(probe_column(probe.papi, e));
  check_software_events(probe);
  return probe;
}

}  // namespace

const Probe& probe() {
  static const Probe p = run_probe();  // thread-safe initialisation, once per process
  return p;
}

}  // namespace schedlab::counters
