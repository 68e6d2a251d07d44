// steal-half's registry entry (scheduler_entry.hpp): its name, summary, parameters, the
// checks of combinations and factory.
#include "entry_params.hpp"
#include "scheduler_entry.hpp"
#include "steal_half/steal_half.hpp"

namespace schedlab {
namespace {

constexpr Word<StealAmount> kStealAmounts[] = {
    {StealAmount::half, "half"}, {StealAmount::one, "one"}, {StealAmount::all, "all"}, {StealAmount::none, "none"}};
constexpr Word<bool> kRunnextTicks[] = {{true, "inherit"}, {false, "count"}};
constexpr Word<HandOff> kHandOffs[] = {{HandOff::lazy, "lazy"}, {HandOff::eager, "eager"}, {HandOff::off, "off"}};

// The default --max-threads must admit every --threads the harness accepts.
static_assert(StealHalfConfig{}.max_threads >= kMaxThreads);

// The StealHalfConfig a resolved parameter set asks for. Throws ParamError for a combination
// the single values do not show (a capacity that is not a power of two, too few max-threads).
StealHalfConfig steal_half_config(unsigned threads, const ParamValues& p) {
  StealHalfConfig c;
  c.max_threads = static_cast<unsigned>(param_int(p, "max-threads"));
  if (c.max_threads < threads) {
    throw ParamError("--max-threads " + std::to_string(c.max_threads) + " is below --threads " +
                     std::to_string(threads) + "; use --max-threads >= --threads");
  }
  try {
    c.capacity = LocalRunQueue::validated(static_cast<std::uint32_t>(param_int(p, "capacity")));
  } catch (const std::invalid_argument& e) {
    throw ParamError(std::string("--capacity: ") + e.what());
  }
  c.steal = chosen(p, "steal-amount", kStealAmounts);
  c.global_check = static_cast<std::uint32_t>(param_int(p, "global-check"));
  c.order = chosen(p, "local-order", kLocalOrders);
  c.handoff = chosen(p, "handoff", kHandOffs);
  c.runnext = chosen(p, "runnext", kOnOff);
  c.steal_runnext = chosen(p, "steal-runnext", kOnOff);
  c.runnext_inherits_tick = chosen(p, "runnext-tick", kRunnextTicks);
  c.spinning = chosen(p, "spinning", kOnOff);
  return c;
}

}  // namespace

std::vector<SchedulerEntry> scheduler_entries_steal_half() {
  SchedulerEntry e{"steal-half", "Go's design: per-P bounded queues, steal half, global queue, 1-in-61 check, spinning, system monitor's hand-off, network poller", runtime_params(), {}};
  e.rank = 30;
  const StealHalfConfig defaults;
  e.params.push_back(integer("capacity", defaults.capacity, LocalRunQueue::kMinCapacity,
                             LocalRunQueue::kMaxCapacity,
                             "local run queue slots, a power of two (Go: 256)"));
  e.params.push_back(choice("steal-amount", kStealAmounts, defaults.steal,
                            "how much of a victim's queue a thief takes (Go: half, rounded up); none: never steal, "
                            "runnext included (the ablation of the stealing claims: work moves between Ps only "
                            "through the global queue)"));
  e.params.push_back(integer("global-check", defaults.global_check, 0, 1000000,
                             "look at the global queue first every Nth schedule tick, 0 never (Go: 61)"));
  e.params.push_back(choice("local-order", kLocalOrders, defaults.order,
                            "which end of its own queue a processor runs first (seeds: lifo; Go's runq: fifo)"));
  e.params.push_back(choice("runnext", kOnOff, defaults.runnext,
                            "Go's runnext: the newest task waits in a one-slot, owner-only LIFO in front of the queue"));
  e.params.push_back(choice("steal-runnext", kOnOff, defaults.steal_runnext,
                            "a thief may take a victim's runnext on its last pass when the victim's queue is empty, "
                            "after a 3 us sleep if the victim is running (Go's runqgrab); off: runnext is its P's alone"));
  e.params.push_back(choice("runnext-tick", kRunnextTicks, defaults.runnext_inherits_tick,
                            "a task taken from runnext inherits the tick of its readier and does not count towards "
                            "the 1-in-N global check (Go's inheritTime), or counts like any other"));
  e.params.push_back(choice("spinning", kOnOff, defaults.spinning,
                            "idle threads spin before parking and a new task wakes a thread only if none spins (Go); "
                            "off: park at once, and every new task wakes one"));
  e.params.push_back(choice("handoff", kHandOffs, defaults.handoff,
                            "around a blocking call: lazy keeps the processor, and the system monitor hands it to another "
                            "thread once the call has lasted two of its rounds (Go's entersyscall and sysmon); eager hands it "
                            "over at once (Go's entersyscallblock); off keeps it blocked with the call"));
  e.params.push_back(integer("max-threads", defaults.max_threads, 1, kMaxThreads * 4,
                             "upper bound on worker threads, counting those blocked in calls"));
  e.make = [](unsigned threads, const ParamValues& p) {
    return make_steal_half(runtime_config(threads, p), steal_half_config(threads, p));
  };
  e.validate = [](unsigned threads, const ParamValues& p) { (void)steal_half_config(threads, p); };
  return {e};
}

}  // namespace schedlab
