// machine_load.cpp: /proc/stat per CPU, this process's time per segment, and the bound (see
// machine_load.hpp).
#include "machine_load.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "assert.hpp"
#include "cpu_pin.hpp"
#include "plan.hpp"

namespace schedlab {
namespace {

double tick_ns() { return 1e9 / static_cast<double>(::sysconf(_SC_CLK_TCK)); }

// add_live_child_cpu_ns()'s tally: the live A/B servers' CPU time reported so far.
double live_child_cpu_ns = 0;

double steady_now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Reads each CPU's line of /proc/stat ("cpuN user nice system idle iowait irq softirq steal
// ..."): busy = user + nice + system + irq + softirq, and steal; -1 for a CPU without a line.
void read_cpu_ticks(const std::vector<int>& cpus, std::vector<double>& busy, std::vector<double>& steal) {
  busy.assign(cpus.size(), -1);
  steal.assign(cpus.size(), -1);
  std::ifstream in("/proc/stat");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream fields(line.substr(3));
    int number = -1;
    fields >> number;
    const auto at = std::find(cpus.begin(), cpus.end(), number);
    if (at == cpus.end()) continue;
    double v[8] = {};  // user nice system idle iowait irq softirq steal
    int n = 0;
    while (n < 8 && fields >> v[n]) ++n;
    if (n < 7) continue;
    const auto i = static_cast<std::size_t>(at - cpus.begin());
    busy[i] = v[0] + v[1] + v[2] + v[5] + v[6];
    if (n == 8) steal[i] = v[7];
  }
}

double sum_over(const std::vector<double>& before, const std::vector<double>& after, const std::vector<unsigned>& cpus,
                bool& known) {
  double total = 0;
  for (unsigned i : cpus) {
    if (before[i] < 0 || after[i] < 0) known = false;
    total += after[i] - before[i];
  }
  return total;
}

}  // namespace

std::vector<unsigned> all_cpus(unsigned usable) {
  std::vector<unsigned> out(usable);
  for (unsigned i = 0; i < usable; ++i) out[i] = i;
  return out;
}

std::vector<unsigned> case_cpus(const Case& c, unsigned usable) {
  if (c.param("pin") != "on") return all_cpus(usable);
  return all_cpus(std::min(c.threads, usable));
}

double own_cpu_ns() {
  auto ns = [](const rusage& u) {
    auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_usec) * 1e3; };
    return tv(u.ru_utime) + tv(u.ru_stime);
  };
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  return ns(self) + ns(children) + live_child_cpu_ns;
}

void add_live_child_cpu_ns(double ns) { live_child_cpu_ns += ns; }

BlockLoad::Sample BlockLoad::sample(const std::vector<int>& cpus) {
  Sample s;
  read_cpu_ticks(cpus, s.busy_ticks, s.steal_ticks);
  s.own_ns = own_cpu_ns();
  s.steady_ns = steady_now_ns();
  s.unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  double load[1];
  if (::getloadavg(load, 1) == 1) s.loadavg_1m = load[0];
  return s;
}

BlockLoad::BlockLoad() : cpus_(allowed_cpus()), start_(sample(cpus_)) {
  mark_steady_ns_ = start_.steady_ns;
  mark_own_ns_ = start_.own_ns;
}

void BlockLoad::close_gap_until(double steady_ns, double own_ns) {
  if (steady_ns > mark_steady_ns_) {
    segments_.push_back({all_cpus(static_cast<unsigned>(cpus_.size())), own_ns - mark_own_ns_, steady_ns - mark_steady_ns_});
  }
  mark_steady_ns_ = steady_ns;
  mark_own_ns_ = own_ns;
}

void BlockLoad::case_begin() {
  SCHEDLAB_ASSERT(!finished_, "a case measured after its block repetition was accounted");
  close_gap_until(steady_now_ns(), own_cpu_ns());
}

void BlockLoad::case_end(const std::vector<unsigned>& cpus) {
  const double now = steady_now_ns(), own = own_cpu_ns();
  segments_.push_back({cpus, own - mark_own_ns_, now - mark_steady_ns_});
  mark_steady_ns_ = now;
  mark_own_ns_ = own;
}

void BlockLoad::finish() {
  if (finished_) return;
  end_ = sample(cpus_);
  close_gap_until(end_.steady_ns, end_.own_ns);
  finished_ = true;
}

double BlockLoad::others_on(double busy_ns, const std::vector<Segment>& segments, const std::vector<unsigned>& cpus) {
  double own_bound = 0;
  for (const Segment& s : segments) {
    const auto shared = static_cast<double>(std::count_if(
        s.cpus.begin(), s.cpus.end(), [&](unsigned c) { return std::find(cpus.begin(), cpus.end(), c) != cpus.end(); }));
    own_bound += std::min(std::max(s.own_ns, 0.0), shared * s.duration_ns);
  }
  return std::max(0.0, busy_ns - own_bound);  // tick rounding can put it slightly below
}

MachineLoad BlockLoad::on(const std::vector<unsigned>& cpus) const {
  SCHEDLAB_ASSERT(finished_, "a block repetition's load is read after finish()");
  MachineLoad m;
  m.loadavg_1m = start_.loadavg_1m;
  m.started_unix_s = start_.unix_s;
  bool known = !cpus.empty();
  const double busy_ns = sum_over(start_.busy_ticks, end_.busy_ticks, cpus, known) * tick_ns();
  if (!known) return m;
  m.other_cpu_ns = others_on(busy_ns, segments_, cpus);
  bool steal_known = true;
  const double steal = sum_over(start_.steal_ticks, end_.steal_ticks, cpus, steal_known);
  if (steal_known) m.steal_ns = steal * tick_ns();
  const double capacity = (end_.steady_ns - start_.steady_ns) * static_cast<double>(cpus.size());
  m.noisy = *m.other_cpu_ns >= kNoisyMinTicks * tick_ns() && capacity > 0 && *m.other_cpu_ns > kNoisyShare * capacity;
  return m;
}

std::vector<double> BlockLoad::other_share_per_cpu() const {
  std::vector<double> out(cpus_.size(), NAN);
  const double capacity = end_.steady_ns - start_.steady_ns;
  for (unsigned i = 0; i < cpus_.size(); ++i) {
    const MachineLoad m = on({i});
    if (m.other_cpu_ns && capacity > 0) out[i] = *m.other_cpu_ns / capacity;
  }
  return out;
}

}  // namespace schedlab
