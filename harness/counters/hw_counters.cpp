// hw_counters.cpp: the facade (hw_counters.hpp): --counters selection, HwCounters (a plan from
// the probe, each worker thread's counters cached across runs, a run's sums), and the sidecar's
// counters metadata.
#include "counters/hw_counters.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "counters/columns.hpp"
#include "counters/kernel_events.hpp"
#include "counters/probe.hpp"
#include "counters/thread_counters.hpp"
#include "params.hpp"

namespace schedlab {
namespace counters {
namespace {

constexpr std::size_t kMaxNotes = 50;

// The columns `--counters cache` selects.
constexpr const char* kCacheColumns[] = {"papi_l1_dcm", "papi_l2_dcm", "papi_l3_tcm"};

bool is_cache_column(const std::string& column) {
  return std::find(std::begin(kCacheColumns), std::end(kCacheColumns), column) !=
         std::end(kCacheColumns);
}

int find_column(const std::string& name) {
  const std::vector<HwEvent>& events = hw_events();
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].column == name) return static_cast<int>(i);
  }
  return -1;
}

// The comma-separated items of a --counters value, trimmed ("" stays an item: an unknown one).
std::vector<std::string> selection_items(const std::string& text) {
  std::vector<std::string> items;
  std::size_t pos = 0;
  do {
    const std::size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    items.push_back(std::move(item));
    pos = comma == std::string::npos ? std::string::npos : comma + 1;
  } while (pos != std::string::npos);
  return items;
}

[[noreturn]] void unknown_counter(const std::string& name) {
  std::string cols;
  for (const HwEvent& e : hw_events()) cols += (cols.empty() ? "" : ", ") + e.column;
  throw ParamError("unknown counter '" + name +
                   "': choose from default, none, sw, cache, sim, model, or a comma list of " + cols);
}

}  // namespace
}  // namespace counters

using counters::kScope;
using counters::Plan;
using counters::ThreadCounters;

std::vector<std::string> parse_counter_selection(const std::string& text) {
  const std::vector<HwEvent>& events = hw_events();
  std::vector<bool> chosen(events.size(), false);
  for (const std::string& item : counters::selection_items(text)) {
    if (item == "default") {
      chosen.assign(events.size(), true);
    } else if (item == "none") {
      // selects nothing; "none" alone gives the empty selection
    } else if (item == "sw" || item == "cache") {
      for (std::size_t i = 0; i < events.size(); ++i) {
        const bool cache = counters::is_cache_column(events[i].column);
        if (item == "sw" ? !events[i].hardware : cache) chosen[i] = true;
      }
    } else {
      const int c = counters::find_column(item);
      if (c < 0) counters::unknown_counter(item);
      chosen[static_cast<std::size_t>(c)] = true;
    }
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (chosen[i]) out.push_back(events[i].column);
  }
  return out;
}

CounterSelection parse_counters(const std::string& text) {
  CounterSelection out;
  std::string events;
  for (const std::string& item : counters::selection_items(text)) {
    if (item == "sim") {
      out.simulated = true;
    } else if (item == "model") {
      out.modelled = true;
    } else {
      events += (events.empty() ? "" : ",") + item;
    }
  }
  const bool only_back_ends = events.empty() && (out.simulated || out.modelled);
  if (!only_back_ends) out.events = parse_counter_selection(events);
  return out;
}

struct HwCounters::Impl {
  std::vector<std::string> columns;
  std::vector<std::size_t> event_index;  // columns[i] is hw_events()[event_index[i]]
  std::vector<CounterAvailability> availability;
  Plan plan;
  std::map<pid_t, std::unique_ptr<ThreadCounters>> cache;  // by tid, kept across runs
  std::vector<ThreadCounters*> active;                     // counting in this run
  std::vector<std::string> run_errors;                     // set-up failures of this run
  bool run_had_threads = false;                            // start() was given any tid
  bool running = false;
  bool scaled = false;
  std::vector<std::string> notes;

  void note(const std::string& s) {
    if (std::find(notes.begin(), notes.end(), s) != notes.end()) return;
    if (notes.size() < counters::kMaxNotes) {
      notes.push_back(s);
    } else if (notes.size() == counters::kMaxNotes) {
      notes.push_back("(further notes omitted)");
    }
  }

  // A failure that leaves this run's sums partial: the run reports none.
  void run_error(const std::string& e) {
    run_errors.push_back(e);
    note(e);
  }

  // Closes cached sets of threads that are gone: their descriptors would pile up as schedulers
  // come and go, and a set attached to a dead thread counts nothing.
  void sweep() {
    for (auto it = cache.begin(); it != cache.end();) {
      it = it->second->alive() ? std::next(it) : cache.erase(it);
    }
  }

  // Opens `tid`'s counters (`tids`: the threads of this run); nullptr, noted, when it cannot.
  std::unique_ptr<ThreadCounters> open_thread(pid_t tid, const std::vector<pid_t>& tids) {
    ThreadCounters::Status status;
    std::string error;
    auto t = ThreadCounters::open(plan, tid, &status, &error);
    if (status == ThreadCounters::Status::out_of_fds) {
      // Sets cached for other schedulers' threads hold descriptors (up to 9 per thread):
      // give them up, the current run's threads come first.
      for (auto c = cache.begin(); c != cache.end();) {
        c = std::find(tids.begin(), tids.end(), c->first) == tids.end() ? cache.erase(c)
                                                                        : std::next(c);
      }
      t = ThreadCounters::open(plan, tid, &status, &error);
    }
    if (!t) {
      if (status == ThreadCounters::Status::gone) {
        note("worker thread " + std::to_string(tid) + " was gone at run start; not counted");
      } else {
        run_error(error);
      }
    }
    return t;
  }

  // `tid`'s counters, cached or opened now; nullptr, noted, when it cannot be counted.
  ThreadCounters* counters_of(pid_t tid, const std::vector<pid_t>& tids) {
    if (tid <= 0) {
      // A worker that has not published its tid yet still runs tasks: without it the sums
      // would be partial, so this run reports none.
      run_error("a worker's tid was not known at run start (" + std::to_string(tid) +
                "): that run's counters are not reported (the scheduler should publish its "
                "workers' tids before its first run)");
      return nullptr;
    }
    auto it = cache.find(tid);
    if (it != cache.end() && it->second->alive()) return it->second.get();
    if (it != cache.end()) cache.erase(it);  // exited, or the tid now names another thread
    std::unique_ptr<ThreadCounters> t = open_thread(tid, tids);
    return t ? cache.emplace(tid, std::move(t)).first->second.get() : nullptr;
  }
};

HwCounters::HwCounters(std::vector<std::string> columns) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  for (const std::string& c : columns) {
    const int i = counters::find_column(c);
    if (i < 0) counters::unknown_counter(c);
    if (std::find(m.columns.begin(), m.columns.end(), c) != m.columns.end()) continue;
    m.columns.push_back(c);
    m.event_index.push_back(static_cast<std::size_t>(i));
  }
  const counters::Probe& p = counters::probe();
  std::vector<std::string> refused(m.columns.size());
  m.plan = counters::make_plan(p, m.event_index, refused);
  for (std::size_t c = 0; c < m.columns.size(); ++c) {
    const counters::ProbedEvent& e = p.events[m.event_index[c]];
    CounterAvailability a{m.columns[c], "", false, ""};
    if (counters::probed_available(e) && refused[c].empty()) {
      a.available = true;
      a.event = counters::event_label(e);
      if (e.exclude_kernel) {
        a.reason = "counted in user space only (" + counters::privilege_text() + ")";
      }
    } else {
      a.reason = refused[c].empty() ? counters::probed_reason(e) : refused[c];
    }
    m.availability.push_back(std::move(a));
  }
}

HwCounters::~HwCounters() = default;
HwCounters::HwCounters(HwCounters&&) noexcept = default;
HwCounters& HwCounters::operator=(HwCounters&&) noexcept = default;

const std::vector<std::string>& HwCounters::columns() const { return impl_->columns; }
const std::vector<CounterAvailability>& HwCounters::availability() const {
  return impl_->availability;
}
bool HwCounters::multiplexed() const { return impl_->plan.papi_multiplex || impl_->scaled; }
const std::vector<std::string>& HwCounters::notes() const { return impl_->notes; }

void HwCounters::start(const std::vector<pid_t>& tids) {
  Impl& m = *impl_;
  if (m.running) throw std::logic_error("HwCounters::start: the previous run was not stopped");
  m.running = true;
  m.active.clear();
  m.run_errors.clear();
  m.run_had_threads = !tids.empty();
  if (m.plan.papi.empty() && m.plan.kernel.empty()) return;  // nothing available or selected

  // New threads: an earlier scheduler's may be gone, and a dead thread's cached set must not
  // stand in for a new thread that got its tid. (Cheap: one pread per cached thread.)
  if (std::any_of(tids.begin(), tids.end(), [&](pid_t t) { return !m.cache.count(t); })) m.sweep();
  // Open what is missing first, so that the counters of all threads start close together.
  std::vector<ThreadCounters*> ready;
  for (pid_t tid : tids) {
    ThreadCounters* t = m.counters_of(tid, tids);
    if (t && std::find(ready.begin(), ready.end(), t) == ready.end()) ready.push_back(t);
  }
  for (ThreadCounters* t : ready) {
    std::string error;
    if (t->start(&error)) {
      m.active.push_back(t);
    } else {
      m.run_error(error);
    }
  }
}

std::vector<std::pair<std::string, std::optional<long long>>> HwCounters::stop() {
  Impl& m = *impl_;
  if (!m.running) throw std::logic_error("HwCounters::stop without start");
  m.running = false;
  const std::size_t n = m.columns.size();
  std::vector<long long> sum(n, 0);
  std::vector<bool> lost(n, false);
  std::vector<std::string> notes;
  for (ThreadCounters* t : m.active) t->stop(m.plan, sum, lost, &m.scaled, notes);
  for (const std::string& s : notes) m.note(s);
  // Threads that exited during the run: their counts up to the exit were read above.
  for (ThreadCounters* t : m.active) {
    if (!t->alive()) {
      m.note("worker thread " + std::to_string(t->tid()) +
             " exited during a run; its counts up to its exit are included");
      m.cache.erase(t->tid());
    }
  }
  const bool measured = !m.active.empty() && m.run_errors.empty();
  if (m.active.empty() && m.run_errors.empty() &&
      (!m.plan.papi.empty() || !m.plan.kernel.empty())) {
    // Threads that were gone are noted by name when start() skipped them.
    m.note(m.run_had_threads ? "a run's worker threads were all gone at its start: nothing was counted"
                             : "a run had no worker threads to count (the scheduler reports none)");
  }
  m.active.clear();
  std::vector<std::pair<std::string, std::optional<long long>>> out;
  out.reserve(n);
  for (std::size_t c = 0; c < n; ++c) {
    std::optional<long long> v;
    if (m.availability[c].available && measured && !lost[c]) v = sum[c];
    out.emplace_back(m.columns[c], v);
  }
  return out;
}

nlohmann::json counter_metadata(const HwCounters& counters) {
  nlohmann::json available = nlohmann::json::array();
  nlohmann::json unavailable = nlohmann::json::object();
  nlohmann::json events = nlohmann::json::object();
  for (const CounterAvailability& a : counters.availability()) {
    if (a.available) {
      available.push_back(a.column);
      events[a.column] = a.event;
    } else {
      unavailable[a.column] = a.reason;
    }
  }
  return {{"available", available}, {"unavailable", unavailable},
          {"events", events},       {"multiplexed", counters.multiplexed()},
          {"scope", kScope},        {"notes", counters.notes()}};
}

}  // namespace schedlab
