// wakeup's registry entry (workload_entry.hpp).
#include "entry_params.hpp"
#include "workload_entry.hpp"
#include "wakeup/wakeup.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_wakeup() {
  const WakeupParams d;
  WorkloadEntry e{"wakeup", "Go's BenchmarkWakeupParallel: two tasks take turns as sender and receiver on unbuffered "
                  "channels, spinning between turns, so each is readied while the other's processor is busy "
                  "(the spinning claim's shape; its delay is the scheduling delay, --latency on)",
                  {integer("rounds", static_cast<std::int64_t>(d.rounds), 1, std::int64_t{1} << 40,
                           "turns each task takes as sender and as receiver"),
                   integer("delay-us", static_cast<std::int64_t>(d.delay_us), 0, 1000000,
                           "microseconds each task spins before its receive (Go's delay)"),
                   integer("wake-delay-us", static_cast<std::int64_t>(d.wake_delay_us), 0, 1000000,
                           "microseconds the sender spins beyond --delay-us, so that the receiver is parked when the "
                           "send comes (Go's wakeDelay: 5)")},
                  [](const ParamValues& p) {
                    return make_wakeup(WakeupParams{param_u64(p, "rounds"), param_u64(p, "delay-us"),
                                                    param_u64(p, "wake-delay-us")});
                  }};
  e.rank = 115;
  e.go_twin = true;
  e.waits = TaskWaits::channels;
  e.test_params = {{{"rounds", "30"}, {"delay-us", "2"}}, {{"rounds", "20"}, {"delay-us", "0"}, {"wake-delay-us", "0"}}};
  return {e};
}

}  // namespace schedlab
