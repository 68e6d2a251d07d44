// counters.hpp: the scheduler counters every backend reports in the same shape.
//
// A backend sets `measured` for each counter it can observe. A counter it cannot observe (oneTBB
// does not tell us about its steals) stays unmeasured and is written as an empty CSV cell, never
// as 0. A counter that is structurally zero for a design (`steals` under `fair`) is measured and
// 0: the scheduler knows it never stole.
#pragma once

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace schedlab {

enum class Counter : std::size_t {
  tasks_spawned,
  tasks_executed,
  local_pushes,
  local_pops,
  steal_attempts,
  steals,
  tasks_stolen,
  global_pushes,
  global_pops,
  overflows,
  migrations,
  fiber_switches,
  suspensions,
  parks,
  unparks,
  idle_ns,
  spinning_ns,
  handoffs,
  retakes,
  sysmon_wakeups,
  sysmon_cpu_ns,
  threads_created,
  peak_live_tasks,
  stacks_allocated,
  netpoll_readied,
  netpoll_polls,
  netpoll_blocked_ns,
  chan_parks,
  chan_readies,
  lock_parks,
  lock_readies,
  ready_runnext,
  ready_runnext_stolen,
  yields,
  preemptions,
  count
};

inline constexpr std::size_t kCounterCount = static_cast<std::size_t>(Counter::count);

// What each counter is: its CSV column and what it counts. The one home of these words: the
// CSV schema (harness/row.cpp), docs/output.md's column table and `schedlab columns` read them here.
struct CounterInfo {
  std::string_view name;
  std::string_view unit;
  std::string_view meaning;
  bool per_worker = true;  // kept by each worker and summed; false: kept by one component
};

inline constexpr std::array<CounterInfo, kCounterCount> kCounters = {{
    {"tasks_spawned", "tasks", "tasks created by spawn() or WaitGroup::go(), plus the root"},
    {"tasks_executed", "tasks", "task bodies run to completion"},
    {"local_pushes", "tasks", "pushes into a per-processor queue"},
    {"local_pops", "tasks", "tasks a processor took from its own queue"},
    {"steal_attempts", "probes", "victims probed by a thief"},
    {"steals", "probes", "probes that moved at least one task"},
    {"tasks_stolen", "tasks", "tasks moved by those steals"},
    {"global_pushes", "tasks",
     "tasks put on a shared queue (central's queue, steal-half's global queue)"},
    {"global_pops", "tasks", "tasks taken from a shared queue"},
    {"overflows", "events", "steal-half: a full local queue moved half of it to the global queue"},
    {"migrations", "tasks",
     "a task started or resumed on another processor than the one that spawned it (a task a channel or mutex "
     "readied: than the one whose task readied it)"},
    {"fiber_switches", "switches", "stack switches (suspend and resume of a task's fiber)"},
    {"suspensions", "events",
     "joins and waits that had to suspend the task, parks on a channel or mutex, yields and preemptions"},
    {"parks", "events", "a worker thread went to sleep"},
    {"unparks", "events", "a sleeping worker thread was woken"},
    {"idle_ns", "ns", "summed time worker threads spent parked"},
    {"spinning_ns", "ns",
     "summed time spent spinning (looking for work while holding no task)"},
    {"handoffs", "events",
     "steal-half: a processor handed to another thread around a blocking call, at the call "
     "(--handoff eager) or once the system monitor took it back (--handoff lazy; the monitor's "
     "hand-offs included)"},
    {"retakes", "events",
     "steal-half --handoff lazy: processors the system monitor took back from a thread whose "
     "blocking call it saw in two consecutive rounds (Go's retake), counted by the monitor",
     false},
    {"sysmon_wakeups", "events",
     "rounds of steal-half's system monitor (it sleeps between rounds, 10 ms apart while a processor is busy "
     "and --preempt safepoint, and deeply while nothing needs watching) or, for fair, central and random-push "
     "with --preempt safepoint, of the runtime's preemption monitor; counted by the monitor",
     false},
    {"sysmon_cpu_ns", "ns",
     "CPU time of that monitor's thread, which is no worker (cpu_ns includes it)",
     false},
    {"threads_created", "threads",
     "gauge: worker threads started so far (including the initial ones)"},
    {"peak_live_tasks", "tasks",
     "gauge: most tasks alive at once in the run (spawned, not finished)"},
    {"stacks_allocated", "stacks", "gauge: fiber stacks allocated so far (pools never shrink)"},
    {"netpoll_readied", "tasks",
     "tasks the network poller made runnable again after they parked on a socket (fiber schedulers "
     "with --netpoll on; 0 where tasks wait in the kernel instead)"},
    {"netpoll_polls", "calls", "epoll_wait calls of the network poller, blocking or not"},
    {"netpoll_blocked_ns", "ns",
     "summed time a thread spent blocked in the network poller's epoll_wait (steal-half: an idle "
     "worker, also counted in idle_ns; fair, central: their poller thread)"},
    {"chan_parks", "events",
     "tasks parked on a channel: a send with no receiver waiting and no room in the buffer, or a receive with "
     "nothing to take"},
    {"chan_readies", "events",
     "parked tasks a channel operation made runnable again (a send or receive that met them, or a close)"},
    {"lock_parks", "events", "tasks parked on a locked mutex (after spinning, where the scheduler allows it)"},
    {"lock_readies", "events", "parked tasks an unlock made runnable again"},
    {"ready_runnext", "events",
     "steal-half: channel and mutex readies that went into the readier's processor's runnext, to run next "
     "there (Go's ready)"},
    {"ready_runnext_stolen", "tasks",
     "steal-half: of those, tasks a thief took from runnext before their processor ran them"},
    {"yields", "events", "tasks that let the others run through yield() (Go's Gosched)"},
    {"preemptions", "events",
     "tasks that yielded at a safe point because the monitor found them running for 10 ms (Go's "
     "forcePreemptNS; --preempt safepoint)"},
}};

constexpr std::string_view counter_name(Counter c) {
  return kCounters[static_cast<std::size_t>(c)].name;
}

// Gauges describe a state (a peak, a pool size, a thread count) rather than events: they are
// not differenced between two snapshots. Everything else is a count or a duration.
constexpr bool is_gauge(Counter c) {
  return c == Counter::peak_live_tasks || c == Counter::stacks_allocated ||
         c == Counter::threads_created;
}

// Which counters a backend observes (SchedulerEntry::counters), one bit per Counter.
using CounterMask = std::bitset<kCounterCount>;
inline CounterMask counter_mask(std::initializer_list<Counter> counters) {
  CounterMask m;
  for (const Counter c : counters) m.set(static_cast<std::size_t>(c));
  return m;
}

struct CounterSet {
  std::array<std::uint64_t, kCounterCount> value{};
  CounterMask measured;

  std::uint64_t& operator[](Counter c) { return value[static_cast<std::size_t>(c)]; }
  std::uint64_t operator[](Counter c) const { return value[static_cast<std::size_t>(c)]; }
  bool has(Counter c) const { return measured[static_cast<std::size_t>(c)]; }
  void set(Counter c, std::uint64_t v) {
    (*this)[c] = v;
    measured.set(static_cast<std::size_t>(c));
  }

  // Adds the counters of a later interval (gauges take the later value).
  CounterSet& operator+=(const CounterSet& later) {
    measured = later.measured;
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      value[i] = is_gauge(static_cast<Counter>(i)) ? later.value[i] : value[i] + later.value[i];
    }
    return *this;
  }

  // The counters of the interval between two snapshots of the same scheduler. Gauges are
  // taken from `after`.
  friend CounterSet operator-(const CounterSet& after, const CounterSet& before) {
    CounterSet d;
    d.measured = after.measured;
    for (std::size_t i = 0; i < kCounterCount; ++i) {
      d.value[i] = is_gauge(static_cast<Counter>(i)) ? after.value[i] : after.value[i] - before.value[i];
    }
    return d;
  }
};

}  // namespace schedlab
