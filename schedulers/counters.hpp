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
#include <string_view>

namespace schedlab {

enum class Counter : std::size_t {
  tasks_spawned,     // tasks created by spawn() or WaitGroup::go(), plus the root
  tasks_executed,    // task bodies run to completion
  local_pushes,      // pushes into a per-processor queue
  local_pops,        // tasks the owner took from its own queue
  steal_attempts,    // victims probed by a thief
  steals,            // probes that moved at least one task
  tasks_stolen,      // tasks moved by those steals
  global_pushes,     // tasks put on a shared queue (central's queue, steal-half's global queue)
  global_pops,       // tasks taken from it
  overflows,         // steal-half: full local queue, half moved to the global queue
  migrations,        // a task started or resumed on a processor other than its spawner's
  fiber_switches,    // stack switches (suspend and resume of a task's fiber)
  suspensions,       // joins/waits that had to suspend the task
  parks,             // a worker thread went to sleep
  unparks,           // a sleeping worker thread was woken
  idle_ns,           // summed time worker threads spent parked
  spinning_ns,       // summed time spent spinning (looking for work while holding no task)
  handoffs,          // steal-half: processor handed to another thread around a blocking call
  threads_created,   // gauge: worker threads started so far (including the initial ones)
  peak_live_tasks,   // gauge: most tasks alive at once in the run (spawned, not finished)
  stacks_allocated,  // gauge: fiber stacks allocated so far (pools never shrink)
  count
};

inline constexpr std::size_t kCounterCount = static_cast<std::size_t>(Counter::count);

inline constexpr std::array<std::string_view, kCounterCount> kCounterNames = {
    "tasks_spawned", "tasks_executed", "local_pushes",   "local_pops",      "steal_attempts",
    "steals",        "tasks_stolen",   "global_pushes",  "global_pops",     "overflows",
    "migrations",    "fiber_switches", "suspensions",    "parks",           "unparks",
    "idle_ns",       "spinning_ns",    "handoffs",       "threads_created", "peak_live_tasks",
    "stacks_allocated"};

// Gauges describe a state (a peak, a pool size, a thread count) rather than events: they are
// not differenced between two snapshots. Everything else is a count or a duration.
constexpr bool is_gauge(Counter c) {
  return c == Counter::peak_live_tasks || c == Counter::stacks_allocated ||
         c == Counter::threads_created;
}

struct CounterSet {
  std::array<std::uint64_t, kCounterCount> value{};
  std::bitset<kCounterCount> measured;

  std::uint64_t& operator[](Counter c) { return value[static_cast<std::size_t>(c)]; }
  std::uint64_t operator[](Counter c) const { return value[static_cast<std::size_t>(c)]; }
  bool has(Counter c) const { return measured[static_cast<std::size_t>(c)]; }
  void set(Counter c, std::uint64_t v) {
    (*this)[c] = v;
    measured.set(static_cast<std::size_t>(c));
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
