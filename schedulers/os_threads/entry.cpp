// os-threads' registry entry (scheduler_entry.hpp): its name, summary, parameters and factory.
#include "entry_params.hpp"
#include "os_threads/os_threads.hpp"
#include "scheduler_entry.hpp"

namespace schedlab {

// --threads binds every task thread to the first N allowed CPUs (pin=on); it does not limit how
// many threads run: the kernel schedules them all (os_threads.cpp).
std::vector<SchedulerEntry> scheduler_entries_os_threads() {
  const OsThreadsConfig defaults;
  SchedulerEntry e{"os-threads", "every task its own pthread, join = pthread_join; the kernel schedules (--threads: CPU affinity only)",
                   stack_params(defaults.stack_size, defaults.stack_guard), {}};
  e.rank = 90;
  // The kernel schedules: no parks, unparks, idle time, migrations or preemptions of its own to
  // count (os_threads.cpp); its queue and steal counters are structurally zero, measured as 0.
  e.counters = CounterMask{}.set() & ~counter_mask({Counter::parks, Counter::unparks, Counter::idle_ns,
                                                     Counter::migrations, Counter::preemptions});
  e.params.push_back(integer("max-live-threads", static_cast<std::int64_t>(defaults.max_live_threads), 1, 1000000,
                             "threads started and not yet joined before spawn fails with an error (pid_max, memory)"));
  e.params.push_back(pin_param(defaults.pin));
  e.make = [](unsigned threads, const ParamValues& p) {
    OsThreadsConfig c;
    c.threads = threads;
    c.stack_size = static_cast<std::size_t>(param_int(p, "stack-size"));
    c.stack_guard = chosen(p, "stack-guard", kOnOff);
    c.max_live_threads = static_cast<std::uint64_t>(param_int(p, "max-live-threads"));
    c.pin = chosen(p, "pin", kOnOff);
    return make_os_threads(c);
  };
  return {e};
}

}  // namespace schedlab
