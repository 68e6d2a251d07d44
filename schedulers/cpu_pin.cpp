// cpu_pin: see cpu_pin.hpp for the rule.
#include "cpu_pin.hpp"

#include <pthread.h>

#include <algorithm>

#include "errno_text.hpp"

namespace schedlab {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) cpus.push_back(std::max(0, ::sched_getcpu()));
  return cpus;
}

cpu_set_t pinned_cpus(const std::vector<int>& allowed, unsigned worker, unsigned workers) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const std::size_t n = allowed.size();
  if (worker < workers) {
    CPU_SET(allowed[worker % n], &set);
  } else {
    for (std::size_t i = 0; i < std::min<std::size_t>(workers, n); ++i) CPU_SET(allowed[i], &set);
  }
  return set;
}

int pin_this_thread(const cpu_set_t& cpus) {
  return ::pthread_setaffinity_np(::pthread_self(), sizeof cpus, &cpus);
}

ScopedPin::ScopedPin(const cpu_set_t& cpus) {
  CPU_ZERO(&previous_);
  error_ = ::pthread_getaffinity_np(::pthread_self(), sizeof previous_, &previous_);
  if (error_ == 0) error_ = pin_this_thread(cpus);
}

ScopedPin::~ScopedPin() {
  if (error_ == 0) (void)pin_this_thread(previous_);
}

std::string pin_refused(const std::string& thread, int err) {
  return "cannot pin " + thread + " to its CPU (--pin on): " + errno_text(err) +
         "; the CPUs this process may use changed since the scheduler was built; use --pin off or rerun";
}

std::string pin_worker(const std::vector<int>& allowed, unsigned worker, unsigned workers,
                       const std::string& thread) {
  const int err = pin_this_thread(pinned_cpus(allowed, worker, workers));
  return err == 0 ? std::string() : pin_refused(thread, err);
}

}  // namespace schedlab
