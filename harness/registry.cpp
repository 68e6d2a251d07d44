#include "registry.hpp"

#include <limits>
#include <set>
#include <stdexcept>

#include "central/central.hpp"
#include "cpu_pin.hpp"
#include "fair/fair.hpp"
#include "fib/fib.hpp"
#include "iomix/iomix.hpp"
#include "locality/locality.hpp"
#include "locality_sizing.hpp"
#include "loops/loops.hpp"
#include "matmul/matmul.hpp"
#include "metadata.hpp"
#include "netmix/netmix.hpp"
#include "nqueens/nqueens.hpp"
#include "os_threads/os_threads.hpp"
#include "recurse/recurse.hpp"
#include "serial/serial.hpp"
#include "skynet/skynet.hpp"
#include "steal_half/steal_half.hpp"
#include "thread_stack.hpp"
#include "uts/uts.hpp"
#if SCHEDLAB_WITH_TBB
#include "tbb/tbb.hpp"
#endif
#if SCHEDLAB_WITH_BOOST_FIBER
#include "boost_fiber/boost_fiber.hpp"
#endif
#if SCHEDLAB_WITH_OPENMP
#include "openmp/openmp.hpp"
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

// A byte count as the command line spells it: with the largest binary suffix that divides it
// (65536: "64K"), so that `schedlab list` shows a config's default the way a user would type it.
std::string size_word(std::uint64_t bytes) {
  for (const auto& [shift, suffix] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}}) {
    const std::uint64_t unit = std::uint64_t{1} << shift;
    if (bytes != 0 && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

// The command-line words of a scheduler's enum or bool setting. One table per setting gives its
// choices, spells its config default and reads the chosen word back, so the three cannot
// disagree.
template <class Value>
struct Word {
  Value value;
  const char* word;
};
constexpr Word<bool> kOnOff[] = {{true, "on"}, {false, "off"}};
constexpr Word<LocalOrder> kLocalOrders[] = {{LocalOrder::lifo, "lifo"}, {LocalOrder::fifo, "fifo"}};
constexpr Word<StealAmount> kStealAmounts[] = {
    {StealAmount::half, "half"}, {StealAmount::one, "one"}, {StealAmount::all, "all"}};
constexpr Word<bool> kRunnextTicks[] = {{true, "inherit"}, {false, "count"}};
constexpr Word<HandOff> kHandOffs[] = {{HandOff::lazy, "lazy"}, {HandOff::eager, "eager"}, {HandOff::off, "off"}};

template <class Value, std::size_t N>
ParamSpec choice(std::string name, const Word<Value> (&words)[N], Value def, std::string help) {
  std::vector<std::string> choices;
  std::string def_word;
  for (const Word<Value>& w : words) {
    choices.emplace_back(w.word);
    if (w.value == def) def_word = w.word;
  }
  return choice(std::move(name), std::move(def_word), std::move(choices), std::move(help));
}

// The value of a choice parameter declared from `words` (resolve_params has checked the word).
template <class Value, std::size_t N>
Value chosen(const ParamValues& p, const std::string& name, const Word<Value> (&words)[N]) {
  const std::string& text = param_str(p, name);
  for (const Word<Value>& w : words) {
    if (text == w.word) return w.value;
  }
  throw std::logic_error("--" + name + " " + text + " was accepted but has no value");
}

// The stack parameters: every fiber scheduler's (StackConfig) and os-threads' (its pthreads).
std::vector<ParamSpec> stack_params(std::size_t default_size, bool default_guard) {
  return {size("stack-size", size_word(default_size), 16 * 1024, std::int64_t{1} << 30,
               "usable bytes per fiber stack (a task that recurses deeply needs more)"),
          choice("stack-guard", kOnOff, default_guard,
                 "a PROT_NONE guard page below each stack, while vm.max_map_count allows")};
}
// --pin, every scheduler's that runs tasks on threads of its own (go-runtime's Go program has no
// per-thread binding). One spec, so that the name, choices and meaning agree everywhere; only the
// default differs (cpu_pin.hpp: kPinByDefault; os-threads: on, os_threads.cpp).
ParamSpec pin_param(bool def) {
  ParamSpec p = choice("pin", kOnOff, def,
                       "on: worker i runs only on the i-th CPU this process may use, wrapping around past the last "
                       "(os-threads: every task thread on the first --threads CPUs); off: the kernel places the threads");
  p.machine_setup = true;
  return p;
}

// --thread-stack, the peers' whose waits nest tasks on their threads' own stacks (tbb, openmp:
// thread_stack.hpp).
ParamSpec thread_stack_param() {
  return size("thread-stack", size_word(kDefaultThreadStackBytes), static_cast<std::int64_t>(kMinThreadStackBytes),
              std::int64_t{1} << 32,
              "stack of every thread that runs tasks (a wait runs tasks nested on the waiting thread's stack, so a "
              "deep tree needs a deep stack: UTS T3L's 17,844 levels want tens of MiB); mapped whole, committed as "
              "touched");
}

std::vector<ParamSpec> fiber_params() {
  std::vector<ParamSpec> params = stack_params(StackConfig{}.size, StackConfig{}.guard);
  params.push_back(pin_param(RuntimeConfig{}.pin));
  return params;
}

// The fiber runtime's own schedulers (fair, central, steal-half): fiber_params and --netpoll.
std::vector<ParamSpec> runtime_params() {
  std::vector<ParamSpec> params = fiber_params();
  params.push_back(choice("netpoll", kOnOff, RuntimeConfig{}.netpoll,
                          "a task waiting for a socket parks on the runtime's epoll poller and its worker runs other "
                          "tasks (steal-half: the workers poll, as Go's; fair, central: a poller thread); off: it waits "
                          "in poll(2) inside blocking(), holding its thread (steal-half hands the processor on)"));
  return params;
}

RuntimeConfig runtime_config(unsigned threads, const ParamValues& p) {
  RuntimeConfig c;
  c.threads = threads;
  c.stack.size = static_cast<std::size_t>(param_int(p, "stack-size"));
  c.stack.guard = chosen(p, "stack-guard", kOnOff);
  c.pin = chosen(p, "pin", kOnOff);
  if (p.count("netpoll") != 0) c.netpoll = chosen(p, "netpoll", kOnOff);  // boost-fiber has no poller
  return c;
}

// The default --max-threads must admit every --threads the harness accepts.
static_assert(StealHalfConfig{}.max_threads >= kMaxThreads);

SchedulerEntry fair_entry() {
  SchedulerEntry e{"fair", "static fair split: each task bound round-robin to one processor, never moves", runtime_params(), {}};
  e.params.push_back(choice("local-order", kLocalOrders, FairConfig{}.order,
                            "which end of its own queue a processor runs first"));
  e.make = [](unsigned threads, const ParamValues& p) {
    FairConfig c;
    c.order = chosen(p, "local-order", kLocalOrders);
    return make_fair(runtime_config(threads, p), c);
  };
  return e;
}

SchedulerEntry central_entry() {
  SchedulerEntry e{"central", "one queue behind one mutex (FIFO; --order lifo: a stack), idle workers on a condition variable", runtime_params(), {}};
  e.params.push_back(choice("order", kLocalOrders, CentralConfig{}.order,
                            "the queue's order: fifo (the seeds' central queue) or lifo (a stack, to separate order from centralisation)"));
  e.make = [](unsigned threads, const ParamValues& p) {
    CentralConfig c;
    c.order = chosen(p, "order", kLocalOrders);
    return make_central(runtime_config(threads, p), c);
  };
  return e;
}

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

SchedulerEntry steal_half_entry() {
  SchedulerEntry e{"steal-half", "Go's design: per-P bounded queues, steal half, global queue, 1-in-61 check, spinning, system monitor's hand-off, network poller", runtime_params(), {}};
  const StealHalfConfig defaults;
  e.params.push_back(integer("capacity", defaults.capacity, LocalRunQueue::kMinCapacity,
                             LocalRunQueue::kMaxCapacity,
                             "local run queue slots, a power of two (Go: 256)"));
  e.params.push_back(choice("steal-amount", kStealAmounts, defaults.steal,
                            "how much of a victim's queue a thief takes (Go: half, rounded up)"));
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
  return e;
}

SchedulerEntry os_threads_entry() {
  // --threads binds every task thread to the first N allowed CPUs (pin=on); it does not limit how
  // many threads run: the kernel schedules them all (os_threads.cpp).
  const OsThreadsConfig defaults;
  SchedulerEntry e{"os-threads", "every task its own pthread, join = pthread_join; the kernel schedules (--threads: CPU affinity only)",
                   stack_params(defaults.stack_size, defaults.stack_guard), {}};
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
  return e;
}

#if SCHEDLAB_WITH_BOOST_FIBER
// Boost.Fiber with one of its multi-thread algorithms, on the fiber runtime's stacks.
SchedulerEntry boost_fiber_entry(std::string name, BoostFiberAlgorithm algorithm, std::string summary) {
  SchedulerEntry e{std::move(name), std::move(summary), fiber_params(), {}};
  e.peer = true;
  e.make = [algorithm](unsigned threads, const ParamValues& p) {
    BoostFiberConfig c;
    c.threads = threads;
    c.algorithm = algorithm;
    const RuntimeConfig rc = runtime_config(threads, p);
    c.stack = rc.stack;
    c.pin = rc.pin;
    return make_boost_fiber(c);
  };
  return e;
}
#endif

#if SCHEDLAB_WITH_OPENMP
SchedulerEntry openmp_entry() {
  SchedulerEntry e{"openmp", "GCC's libgomp: spawn = omp task, join = taskwait, one parallel region of --threads threads per run",
                   {pin_param(kPinByDefault), thread_stack_param()},
                   [](unsigned threads, const ParamValues& p) {
                     return make_openmp(threads, chosen(p, "pin", kOnOff),
                                        static_cast<std::size_t>(param_int(p, "thread-stack")));
                   }};
  e.peer = true;
  e.validate = [](unsigned, const ParamValues&) {
    if (std::string why = openmp_thread_stack_conflict(); !why.empty()) throw ParamError(why);
  };
  return e;
}
#endif

// A label only, for the A/A control that measures a run's noise floor: the same configuration
// twice (--replica a,b) in the same blocks. Every scheduler but the elision takes it; it changes
// nothing.
ParamSpec replica_param() {
  ParamSpec p = choice("replica", "a", {"a", "b"},
                       "a label: two replicas of one configuration in the same repetitions are the A/A "
                       "control whose time ratio is the run's noise floor");
  p.machine_setup = true;
  return p;
}

std::vector<SchedulerEntry> build_schedulers() {
  std::vector<SchedulerEntry> r{fair_entry(), central_entry(), steal_half_entry()};
#if SCHEDLAB_WITH_TBB
  r.push_back({"tbb", "oneTBB: task_arena with --threads slots, task_group per join",
               {pin_param(kPinByDefault), thread_stack_param()},
               [](unsigned threads, const ParamValues& p) {
                 return make_tbb(threads, chosen(p, "pin", kOnOff), static_cast<std::size_t>(param_int(p, "thread-stack")));
               },
               /*single_threaded=*/false, SchedulerKind::in_process, /*peer=*/true});
#endif
#if SCHEDLAB_WITH_BOOST_FIBER
  r.push_back(boost_fiber_entry("boost-fiber", BoostFiberAlgorithm::work_stealing,
                                "Boost.Fiber's work_stealing: a fiber per task, a queue per thread, idle threads steal; fiber::join"));
  r.push_back(boost_fiber_entry("boost-fiber-shared", BoostFiberAlgorithm::shared_work,
                                "Boost.Fiber's shared_work: a fiber per task, one queue behind one mutex for all threads"));
#endif
#if SCHEDLAB_WITH_OPENMP
  r.push_back(openmp_entry());
#endif
  r.push_back({kElisionName, "the sequential elision: each workload's own program with every spawn a plain call and no "
               "scheduler at all; T_S, the baseline of the speedup and work_overhead columns (presets measure it in "
               "every block; add --scheduler elision to a run for them); one thread",
               {pin_param(kPinByDefault)}, {}, /*single_threaded=*/true, SchedulerKind::elision});
  r.push_back({"serial", "the task API on one thread, each spawn run at once: what spawn, join and wait cost "
               "without any scheduling (one thread)", {pin_param(kPinByDefault)},
               [](unsigned, const ParamValues& p) { return make_serial(chosen(p, "pin", kOnOff)); },
               /*single_threaded=*/true});
  r.push_back(os_threads_entry());
  // The real thing: Go's own runtime running the same programs (workloads/go), GOMAXPROCS =
  // --threads. Only fib-go, fib, loops, iomix and netmix have Go twins.
  r.push_back({"go-runtime", "Go's scheduler itself: the Go twins of fib-go, fib, loops, iomix and netmix (workloads/go), GOMAXPROCS = --threads",
               {}, {}, /*single_threaded=*/false, SchedulerKind::external, /*peer=*/true});
  // The elision takes no replica: the A/A control pairs two replicas of one scheduler, and the
  // elision a preset adds to every block (presets.cpp) is measured once beside them.
  for (SchedulerEntry& e : r) {
    if (!e.elision()) e.params.push_back(replica_param());
  }
  return r;
}

// The field's standard task benchmarks (README, "The field's benchmarks"), one entry each.
WorkloadEntry skynet_entry() {
  const SkynetParams defaults;
  return {"skynet", "the skynet microbenchmark: a 10-way tree of tasks down to --leaves, each leaf returning its index, "
          "each parent the sum of its children's",
          {integer("leaves", static_cast<std::int64_t>(defaults.leaves), 1, static_cast<std::int64_t>(kSkynetMaxLeaves),
                   "leaves of the tree, a power of 10 (1e6: the original; 1e8: tzcnt/runtime-benchmarks')")},
          [](const ParamValues& p) { return make_skynet(SkynetParams{static_cast<std::uint64_t>(param_int(p, "leaves"))}); }};
}

WorkloadEntry nqueens_entry() {
  return {"nqueens", "N-queens: one task per legal placement of the next queen, joined; counts the solutions",
          {integer("n", NqueensParams{}.n, 1, kNqueensMaxN, "the board is n x n (14: the field's size)")},
          [](const ParamValues& p) { return make_nqueens(NqueensParams{static_cast<int>(param_int(p, "n"))}); }};
}

WorkloadEntry uts_entry() {
  std::vector<std::string> trees;
  for (const UtsTree& t : uts_trees()) trees.emplace_back(t.name);
  return {"uts", "Unbalanced Tree Search: a tree drawn from a SHA-1 random stream, one task per node, counted",
          {choice("tree", "T1", trees,
                  "UTS's named trees (T1, T3: ~4M nodes; T1L, T3L: ~100M) or the small mini- trees (tests, quick preset)")},
          [](const ParamValues& p) { return make_uts(param_str(p, "tree")); }};
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
      FibParams f{static_cast<int>(param_int(p, "n")), static_cast<int>(param_int(p, "cutoff"))};
      if (p.count("base") != 0) f.base = static_cast<int>(param_int(p, "base"));
      return make_fib(shape, f);
    };
  };
  std::vector<ParamSpec> fib_go_params = fib_params(27);
  fib_go_params.push_back(integer("base", kFibSeedBase, 1, kFibSeedBase,
                                  "calls with n <= base return at once: 2, the seed's fib(1) = fib(2) = 1; "
                                  "1, tzcnt's fib(n) = n below 2 (fib(2) spawns fib(1) and fib(0))"));
  r.push_back({"fib-go", "fork-join fib, goroutine shape: every call spawns fib(n-1) and fib(n-2) and joins both",
               fib_go_params, fib_make(FibShape::go)});
  r.push_back({"fib", "fork-join fib, Cilk shape: spawn fib(n-1), compute fib(n-2) inline, join",
               fib_params(30), fib_make(FibShape::cilk)});

  auto u64 = [](const ParamValues& p, const char* name) { return static_cast<std::uint64_t>(param_int(p, name)); };
  // --tasks is written to the CSV as task_count: `tasks` is the column of tasks a run executed.
  auto task_count = [](std::int64_t def, std::int64_t max, std::string help) {
    ParamSpec s = integer("tasks", def, 1, max, std::move(help));
    s.csv_column = "task_count";
    return s;
  };
  const LoopsParams loops;
  r.push_back({"loops", "one parent spawns --tasks increment loops of --iters each and waits on a wait group",
               {task_count(static_cast<std::int64_t>(loops.tasks), 10000000, "loop tasks the parent spawns"),
                integer("iters", static_cast<std::int64_t>(loops.iters), 0, std::int64_t{1} << 40,
                        "increments per task (before skew)"),
                choice("skew", loops.skew, {"uniform", "one-long", "heavy-tail"},
                       "task lengths: all equal; one task as long as half of the uniform total; Pareto(1.5) with mean ~iters"),
                choice("long-at", loops.long_at, {"first", "last", "random"},
                       "one-long: the long task is spawned first, last, or at a position drawn from --seed"),
                integer("seed", static_cast<std::int64_t>(loops.seed), 0, std::numeric_limits<std::int64_t>::max(),
                        "seed of the heavy-tail lengths and of one-long's random position")},
               [u64](const ParamValues& p) {
                 return make_loops(LoopsParams{u64(p, "tasks"), u64(p, "iters"), param_str(p, "skew"), u64(p, "seed"),
                                               param_str(p, "long-at")});
               }});
  r.push_back({"iomix", "--tasks tasks of --iters increments, each reading files at its midpoint through blocking()",
               {task_count(20, 1000000, "tasks, each computing and reading"),
                integer("iters", 1000000, 0, std::int64_t{1} << 40, "increments per task, half before the reads"),
                integer("files", 4, 1, 100000, "files created for the run"),
                size("file-size", "64K", 0, std::int64_t{1} << 34, "bytes per file"),
                integer("reads-per-task", 1, 0, 1000000, "whole-file reads at each task's midpoint"),
                choice("cold", "off", {"off", "on"}, "drop each file from the page cache before reading it"),
                ParamSpec{"io-dir", ParamKind::path, "", "directory for the files (default $TMPDIR or /tmp)", 0, 0, {}}},
               [u64](const ParamValues& p) {
                 return make_iomix(IomixParams{u64(p, "tasks"), u64(p, "iters"), u64(p, "files"), u64(p, "file-size"),
                                               u64(p, "reads-per-task"), param_str(p, "cold") == "on",
                                               param_str(p, "io-dir")});
               }});
  r.push_back({"netmix", "--conns connections over loopback TCP to an echo server of its own, each a task that "
               "computes --iters increments and then waits for the reply to its request, --requests times: a "
               "socket wait (the poller's under the fiber schedulers)",
               {integer("conns", static_cast<std::int64_t>(NetmixParams{}.conns), 1, 100000,
                        "connections, one task each, to the workload's echo server on 127.0.0.1"),
                integer("requests", static_cast<std::int64_t>(NetmixParams{}.requests), 1, 1000000000,
                        "requests per connection, each answered before the next"),
                integer("iters", static_cast<std::int64_t>(NetmixParams{}.iters), 0, std::int64_t{1} << 40,
                        "increments of CPU work before each request"),
                integer("server-delay-us", static_cast<std::int64_t>(NetmixParams{}.server_delay_us), 0, 1000000,
                        "the server holds each reply this many microseconds (a remote service's latency)"),
                size("request-bytes", std::to_string(NetmixParams{}.request_bytes), 1, 65536,
                     "bytes per request; the server echoes them")},
               [u64](const ParamValues& p) {
                 NetmixParams n;
                 n.conns = u64(p, "conns");
                 n.requests = u64(p, "requests");
                 n.iters = u64(p, "iters");
                 n.server_delay_us = u64(p, "server-delay-us");
                 n.request_bytes = u64(p, "request-bytes");
                 return make_netmix(n);
               }});
  // Sized from this machine's caches (locality_sizing.hpp) unless --bytes or --leaf say otherwise.
  auto size_auto = [](std::string name, std::string help) {
    ParamSpec s = size(std::move(name), "auto", 64, std::int64_t{1} << 36, std::move(help));
    s.allows_auto = true;
    return s;
  };
  auto settle_locality = [](ParamValues& p) {
    const LocalitySizing& sizes = locality_sizing();
    const bool chase = param_str(p, "access") == "chase";
    if (param_str(p, "bytes") == "auto") p["bytes"] = std::to_string(chase ? sizes.chase_bytes : sizes.sweep_bytes);
    if (param_str(p, "leaf") == "auto") p["leaf"] = std::to_string(chase ? sizes.chase_leaf : sizes.sweep_leaf);
  };
  r.push_back({"locality", "recursive halving over an array sized from the caches: each child goes over the half its parent just wrote",
               {size_auto("bytes", "array size, a power of two (default auto: sweep 16 x this machine's L2, chase the smallest "
                                   "power of two at least twice its last-level cache)"),
                size_auto("leaf", "regions this small are leaves, a power of two (default auto: sweep L2 / 8, chase L2 / 2)"),
                integer("passes", 4, 1, 1000, "passes each node makes over its region"),
                choice("access", "sweep", {"sweep", "chase"},
                       "how a node goes over its region: sweep, front to back (the hardware prefetcher streams it), or "
                       "chase, a dependent walk over a seeded random permutation of its lines (every miss costs a full "
                       "latency)")},
               [u64, settle_locality](ParamValues p) {
                 settle_locality(p);
                 return make_locality(LocalityParams{u64(p, "bytes"), u64(p, "leaf"), u64(p, "passes"),
                                                     param_str(p, "access") == "chase" ? LocalityAccess::chase
                                                                                       : LocalityAccess::sweep});
               },
               settle_locality});
  r.push_back({"matmul", "recursive blocked matrix multiply C = A B (8 sub-products per level, two phases of 4)",
               {integer("dim", 512, 1, 16384, "matrix dimension, a power of two"),
                integer("block", 64, 1, 16384, "submatrix size of a serial leaf, a power of two"),
                choice("element", "double", {"double", "int32"},
                       "element type: double, or int32 as tzcnt/runtime-benchmarks runs it (--dim 2048 --block 32)")},
               [u64](const ParamValues& p) {
                 return make_matmul(MatmulParams{u64(p, "dim"), u64(p, "block"), param_str(p, "element")});
               }});
  const RecurseParams recurse;
  r.push_back({"recurse", "--tasks tasks, each recursing --depth calls deep with a 256-byte frame per call: meets "
               "the stack limits on purpose (a --depth past --stack-size / 256 overflows a fiber stack)",
               {task_count(static_cast<std::int64_t>(recurse.tasks), 10000, "tasks, each recursing --depth calls"),
                integer("depth", static_cast<std::int64_t>(recurse.depth), 0, 100000,
                        "calls deep each task recurses, 256 bytes of stack each")},
               [u64](const ParamValues& p) { return make_recurse(RecurseParams{u64(p, "tasks"), u64(p, "depth")}); }});
  r.push_back(skynet_entry());
  r.push_back(nqueens_entry());
  r.push_back(uts_entry());
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

std::vector<std::string> peer_names() {
  std::vector<std::string> out;
  for (const SchedulerEntry& e : scheduler_registry()) {
    if (e.peer) out.push_back(e.name);
  }
  return out;
}

std::optional<std::string> missing_from_this_build(const std::string& name) {
#if !SCHEDLAB_WITH_TBB
  if (name == "tbb") return std::string("this build has no oneTBB (SCHEDLAB_WITH_TBB=OFF)");
#endif
#if !SCHEDLAB_WITH_BOOST_FIBER
  if (name == "boost-fiber" || name == "boost-fiber-shared") {
    return std::string("this build has no Boost.Fiber (SCHEDLAB_WITH_BOOST_FIBER=OFF)");
  }
#endif
#if !SCHEDLAB_WITH_OPENMP
  if (name == "openmp") return std::string("this build has no OpenMP (SCHEDLAB_WITH_OPENMP=OFF)");
#endif
  (void)name;
  return std::nullopt;
}

const SchedulerEntry& find_scheduler(const std::string& name) {
  if (const std::optional<std::string> why = missing_from_this_build(name)) {
    throw ParamError("scheduler '" + name + "' is not available: " + *why +
                     "; rebuild with it on (the release build has it), or choose another");
  }
  return find_in(scheduler_registry(), name, "scheduler");
}

const WorkloadEntry& find_workload(const std::string& name) {
  return find_in(workload_registry(), name, "workload");
}

std::unique_ptr<Scheduler> make_scheduler(const std::string& name, unsigned threads,
                                          const ParamValues& params) {
  const SchedulerEntry& e = find_scheduler(name);
  if (e.external()) throw ParamError("scheduler " + name + " is an external program; only `schedlab run` can run it");
  if (e.elision()) throw ParamError("scheduler " + name + " is the sequential elision, not a scheduler; only `schedlab run` can run it");
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
