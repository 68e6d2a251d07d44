#include "registry.hpp"

#include <set>

#include "central/central.hpp"
#include "fair/fair.hpp"
#include "fib/fib.hpp"
#include "serial/serial.hpp"
#include "steal_half/steal_half.hpp"
#if SCHEDLAB_WITH_TBB
#include "tbb/tbb.hpp"
#endif

namespace schedlab {
namespace {

ParamSpec integer(std::string name, std::int64_t def, std::int64_t min, std::int64_t max,
                  std::string help) {
  return ParamSpec{std::move(name), ParamKind::integer, std::to_string(def), std::move(help),
                   min, max, {}};
}
ParamSpec size(std::string name, std::string def, std::int64_t min, std::int64_t max,
               std::string help) {
  return ParamSpec{std::move(name), ParamKind::size, std::move(def), std::move(help), min, max, {}};
}
ParamSpec choice(std::string name, std::string def, std::vector<std::string> choices,
                 std::string help) {
  return ParamSpec{std::move(name), ParamKind::choice, std::move(def), std::move(help), 0, 0,
                   std::move(choices)};
}

// Parameters every fiber scheduler shares: its stacks.
std::vector<ParamSpec> fiber_params() {
  return {size("stack-size", "64K", 16 * 1024, std::int64_t{1} << 30,
               "usable bytes per fiber stack (a task that recurses deeply needs more)"),
          choice("stack-guard", "on", {"on", "off"},
                 "a PROT_NONE guard page below each stack, while vm.max_map_count allows")};
}

RuntimeConfig runtime_config(unsigned threads, const ParamValues& p) {
  RuntimeConfig c;
  c.threads = threads;
  c.stack.size = static_cast<std::size_t>(param_int(p, "stack-size"));
  c.stack.guard = param_str(p, "stack-guard") == "on";
  return c;
}

LocalOrder order_of(const ParamValues& p) {
  return param_str(p, "local-order") == "lifo" ? LocalOrder::lifo : LocalOrder::fifo;
}

std::vector<SchedulerEntry> build_schedulers() {
  std::vector<SchedulerEntry> r;

  {
    SchedulerEntry e{"fair", "static fair split: each task bound round-robin to one processor, never moves", fiber_params(), {}};
    e.params.push_back(choice("local-order", "lifo", {"lifo", "fifo"},
                              "which end of its own queue a processor runs first"));
    e.make = [](unsigned threads, const ParamValues& p) {
      return make_fair(runtime_config(threads, p), FairConfig{order_of(p)});
    };
    r.push_back(std::move(e));
  }
  {
    SchedulerEntry e{"central", "one FIFO queue behind one mutex, idle workers on a condition variable", fiber_params(), {}};
    e.make = [](unsigned threads, const ParamValues& p) {
      return make_central(runtime_config(threads, p));
    };
    r.push_back(std::move(e));
  }
  {
    SchedulerEntry e{"steal-half", "Go's design: per-P bounded queues, steal half, global queue, 1-in-61 check, spinning, hand-off", fiber_params(), {}};
    e.params.push_back(integer("capacity", 256, 2, LocalRunQueue::kMaxCapacity,
                               "local run queue slots, a power of two (Go: 256)"));
    e.params.push_back(choice("steal-amount", "half", {"half", "one", "all"},
                              "how much of a victim's queue a thief takes (Go: half, rounded up)"));
    e.params.push_back(integer("global-check", 61, 0, 1000000,
                               "look at the global queue first every Nth schedule tick, 0 never (Go: 61)"));
    e.params.push_back(choice("local-order", "lifo", {"lifo", "fifo"},
                              "which end of its own queue a processor runs first (seeds: lifo; Go's runq: fifo)"));
    e.params.push_back(choice("runnext", "on", {"on", "off"},
                              "Go's runnext: the newest task waits in a one-slot, owner-only LIFO in front of the queue"));
    e.params.push_back(choice("handoff", "on", {"on", "off"},
                              "hand the processor to another thread during blocking calls"));
    e.params.push_back(integer("max-threads", 1024, 1, kMaxThreads * 4,
                               "upper bound on worker threads, counting those blocked in calls"));
    e.make = [](unsigned threads, const ParamValues& p) {
      RuntimeConfig rc = runtime_config(threads, p);
      rc.max_threads = static_cast<unsigned>(param_int(p, "max-threads"));
      if (rc.max_threads < threads) {
        throw ParamError("--max-threads " + std::to_string(rc.max_threads) + " is below --threads " +
                         std::to_string(threads) + "; use --max-threads >= --threads");
      }
      const std::string amount = param_str(p, "steal-amount");
      StealHalfConfig c;
      c.capacity = static_cast<std::uint32_t>(param_int(p, "capacity"));
      if ((c.capacity & (c.capacity - 1)) != 0) {
        throw ParamError("--capacity " + std::to_string(c.capacity) +
                         ": not a power of two; use 2, 4, 8, ... 16384");
      }
      c.steal = amount == "half" ? StealAmount::half : amount == "one" ? StealAmount::one : StealAmount::all;
      c.global_check = static_cast<std::uint32_t>(param_int(p, "global-check"));
      c.order = order_of(p);
      c.handoff = param_str(p, "handoff") == "on";
      c.runnext = param_str(p, "runnext") == "on";
      return make_steal_half(rc, c);
    };
    r.push_back(std::move(e));
  }
#if SCHEDLAB_WITH_TBB
  {
    SchedulerEntry e{"tbb", "oneTBB: task_arena with --threads slots, task_group per join", {}, {}};
    e.make = [](unsigned threads, const ParamValues&) { return make_tbb(threads); };
    r.push_back(std::move(e));
  }
#endif
  {
    SchedulerEntry e{"serial", "the sequential elision: spawn is a plain call (T_S baseline, one thread)", {}, {}};
    e.make = [](unsigned, const ParamValues&) { return make_serial(); };
    e.single_threaded = true;
    r.push_back(std::move(e));
  }
  return r;
}

std::vector<WorkloadEntry> build_workloads() {
  std::vector<WorkloadEntry> r;
  auto fib_params = [](int default_n) {
    return std::vector<ParamSpec>{
        integer("n", default_n, 0, kFibMaxN, "compute fib(n)"),
        integer("cutoff", 0, 0, kFibMaxN, "calls with n <= cutoff run serially; 0: none")};
  };
  auto fib_make = [](FibShape shape) {
    return [shape](const ParamValues& p) {
      return make_fib(shape, FibParams{static_cast<int>(param_int(p, "n")),
                                       static_cast<int>(param_int(p, "cutoff"))});
    };
  };
  r.push_back({"fib-go", "fork-join fib, goroutine shape: every call spawns fib(n-1) and fib(n-2) and joins both",
               fib_params(27), fib_make(FibShape::go)});
  r.push_back({"fib", "fork-join fib, Cilk shape: spawn fib(n-1), compute fib(n-2) inline, join",
               fib_params(30), fib_make(FibShape::cilk)});
  return r;
}

template <class Entry>
const Entry& find_in(const std::vector<Entry>& entries, const std::string& name, const char* what) {
  for (const Entry& e : entries) {
    if (e.name == name) return e;
  }
  std::string names;
  for (const Entry& e : entries) names += (names.empty() ? "" : ", ") + e.name;
  throw ParamError(std::string("unknown ") + what + " '" + name + "': choose one of " + names);
}

}  // namespace

const std::vector<SchedulerEntry>& scheduler_registry() {
  static const std::vector<SchedulerEntry> r = build_schedulers();
  return r;
}

const std::vector<WorkloadEntry>& workload_registry() {
  static const std::vector<WorkloadEntry> r = build_workloads();
  return r;
}

const SchedulerEntry& find_scheduler(const std::string& name) {
  return find_in(scheduler_registry(), name, "scheduler");
}

const WorkloadEntry& find_workload(const std::string& name) {
  return find_in(workload_registry(), name, "workload");
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& name, unsigned threads,
                                          const ParamValues& params) {
  const SchedulerEntry& e = find_scheduler(name);
  return e.make(threads, resolve_params(e.params, params, "scheduler " + name));
}

std::vector<ParamSpec> all_param_specs() {
  std::vector<ParamSpec> out;
  std::set<std::string> seen;
  auto add = [&](const std::vector<ParamSpec>& specs) {
    for (const ParamSpec& s : specs) {
      if (seen.insert(s.name).second) out.push_back(s);
    }
  };
  for (const auto& w : workload_registry()) add(w.params);
  for (const auto& s : scheduler_registry()) add(s.params);
  return out;
}

}  // namespace schedlab
