// Whole-runtime stress: random spawn trees under every in-process scheduler of the registry, at
// 1, 2, 3 and 8 worker threads (8 oversubscribes a 2-core machine), and under steal-half and
// fair with non-default parameters.
//
// A tree is generated from a seed before the run (so it is the same whatever the schedule):
// depth up to 10, fan-out 0 to 6 (sometimes 16), ~3000 nodes. Each node picks how it spawns
// and joins its children: JoinHandles joined in order or in reverse, one WaitGroup, both mixed,
// or handles dropped so that their destructors join. Some nodes make a blocking() call (a tiny
// sleep or a yield) before spawning, between spawning and joining, or after joining; some throw
// after computing their result, and the parent must receive that exception (from join(), or
// as the group's first exception from wait()). Each node's result hashes its value with its
// children's results in order, so a lost, duplicated or misplaced result changes the checksum.
//
// Checked after each tree: every node ran exactly once and made exactly its planned blocking
// calls; every node's result, the root's included, equals the serially computed one; every
// thrown exception reached its joiner exactly as planned; the counters agree (tasks spawned =
// nodes, executed = spawned); under the fiber runtimes, never more tasks ran at once than there
// are worker threads (Ps). A watchdog aborts with the scheduler, thread count and seed if a run
// hangs. SCHEDLAB_STRESS_SEED=N replays the trees of base seed N (printed on failure).
//
// CompletionRace aims at one protocol: joins racing their children's end across workers (see
// the test).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api.hpp"
#include "registry.hpp"
#include "runtime/runtime.hpp"
#include "stress_util.hpp"

namespace schedlab {
namespace {

using stress::mix64;
using stress::Rng;
using stress::Watchdog;

// ---- the tree --------------------------------------------------------------------------------

enum class Mode : std::uint8_t { leaf, handles, handles_reverse, group, mixed, dropped };
enum class Block : std::uint8_t { none, before, between, after };

struct Node {
  std::uint32_t first = 0;  // children are first .. first+count-1 (breadth-first numbering)
  std::uint32_t count = 0;
  std::uint32_t parent = 0;
  Mode mode = Mode::leaf;
  Block block = Block::none;
  std::uint16_t block_us = 0;  // 0: yield
  std::uint16_t spin = 0;
  bool throws = false;
  bool group_first = false;  // mixed: wait for the group before joining the handles
  std::uint64_t value = 0;
};

struct Tree {
  std::vector<Node> nodes;
  std::vector<std::uint64_t> expect;  // each node's result
  std::uint32_t handle_catches = 0;   // throwing children joined through a handle
  std::uint32_t group_catches = 0;    // groups with at least one throwing child
  std::uint32_t blocking_calls = 0;
};

Tree make_tree(std::uint64_t seed, std::uint32_t max_nodes) {
  Rng rng(seed);
  Tree t;
  t.nodes.reserve(max_nodes);
  std::vector<std::uint8_t> depth;
  t.nodes.emplace_back();
  depth.push_back(0);
  t.nodes[0].value = rng.next();
  t.nodes[0].throws = rng.chance(15);  // run() must rethrow the root's exception
  for (std::uint32_t i = 0; i < t.nodes.size(); ++i) {
    std::uint32_t fan = 0;
    if (i == 0) {
      fan = 4 + rng.below(9);
    } else if (depth[i] < 10 && !rng.chance(30)) {
      fan = rng.chance(4) ? 16 : 1 + rng.below(6);
    }
    const auto room = static_cast<std::uint32_t>(max_nodes - t.nodes.size());
    if (fan > room) fan = room;
    Node& n = t.nodes[i];
    n.first = static_cast<std::uint32_t>(t.nodes.size());
    n.count = fan;
    n.spin = static_cast<std::uint16_t>(rng.below(300));
    if (rng.chance(12)) {
      n.block = static_cast<Block>(1 + rng.below(3));
      n.block_us = rng.chance(50) ? 0 : static_cast<std::uint16_t>(1 + rng.below(30));
      ++t.blocking_calls;
    }
    bool child_throws = false;
    for (std::uint32_t k = 0; k < fan; ++k) {
      Node c;
      c.parent = i;
      c.value = rng.next();
      c.throws = rng.chance(7);
      child_throws = child_throws || c.throws;
      t.nodes.push_back(c);  // invalidates n
      depth.push_back(static_cast<std::uint8_t>(depth[i] + 1));
    }
    Node& m = t.nodes[i];
    if (fan == 0) {
      m.mode = Mode::leaf;
    } else {
      m.mode = static_cast<Mode>(1 + rng.below(5));
      // A dropped handle's exception would be unobserved (run() reports that as an error).
      if (m.mode == Mode::dropped && child_throws) m.mode = Mode::handles;
      m.group_first = rng.chance(50);
    }
  }
  // Results bottom-up (children have larger indices), and the exceptions each parent catches.
  t.expect.assign(t.nodes.size(), 0);
  for (std::uint32_t i = static_cast<std::uint32_t>(t.nodes.size()); i-- > 0;) {
    const Node& n = t.nodes[i];
    std::uint64_t sum = n.value;
    bool group_throw = false;
    for (std::uint32_t k = 0; k < n.count; ++k) {
      const std::uint32_t c = n.first + k;
      sum += (k + 1) * t.expect[c];
      const bool via_group = n.mode == Mode::group || (n.mode == Mode::mixed && k % 2 == 1);
      if (t.nodes[c].throws) {
        if (via_group) {
          group_throw = true;
        } else {
          ++t.handle_catches;
        }
      }
    }
    t.group_catches += group_throw;
    t.expect[i] = mix64(sum);
  }
  return t;
}

// ---- running it ------------------------------------------------------------------------------

struct NodeError : std::exception {
  NodeError(std::uint32_t id_, std::uint64_t result_) : id(id_), result(result_) {}
  const char* what() const noexcept override { return "node threw (planned)"; }
  std::uint32_t id;
  std::uint64_t result;
};

// Tasks counted in only while they surely hold a worker, out before they may give it up; the
// count can exceed the worker count only if two tasks really ran on one (see queue_stress).
struct Occupancy {
  int limit = 0;  // 0: not checked
  std::atomic<int> now{0};
  std::atomic<int> peak{0};
  std::atomic<int> violations{0};
  void enter() {
    if (limit == 0) return;
    const int n = now.fetch_add(1, std::memory_order_acq_rel) + 1;
    int p = peak.load(std::memory_order_relaxed);
    while (n > p && !peak.compare_exchange_weak(p, n, std::memory_order_relaxed)) {
    }
    if (n > limit) violations.fetch_add(1, std::memory_order_relaxed);
  }
  void leave() {
    if (limit != 0) now.fetch_sub(1, std::memory_order_acq_rel);
  }
};

struct Ctx {
  explicit Ctx(const Tree& t)
      : tree(t), ran(t.nodes.size()), calls(t.nodes.size()), results(t.nodes.size(), 0) {}
  const Tree& tree;
  std::vector<std::atomic<std::uint8_t>> ran;
  std::vector<std::atomic<std::uint8_t>> calls;
  std::vector<std::uint64_t> results;  // written by the node, read by its parent after the join
  std::atomic<std::uint32_t> handle_catches{0};
  std::atomic<std::uint32_t> group_catches{0};
  std::atomic<std::uint32_t> errors{0};
  std::atomic<std::uint64_t> finished{0};
  Occupancy occ;
  std::atomic<std::uint32_t> first_error_node{UINT32_MAX};

  void error(std::uint32_t node) {
    errors.fetch_add(1);
    std::uint32_t none = UINT32_MAX;
    first_error_node.compare_exchange_strong(none, node);
  }
};

void blocking_call(Ctx& ctx, std::uint32_t i) {
  const Node& n = ctx.tree.nodes[i];
  ctx.occ.leave();
  blocking([&] {
    ctx.calls[i].fetch_add(1, std::memory_order_relaxed);
    if (n.block_us == 0) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(n.block_us));
    }
  });
  ctx.occ.enter();
}

std::uint64_t run_node(Ctx& ctx, std::uint32_t i);

// Joins one handle; a throwing child's exception must be its own.
std::uint64_t join_child(Ctx& ctx, std::uint32_t i, std::uint32_t c, JoinHandle<std::uint64_t>& h) {
  try {
    const std::uint64_t r = h.join();
    if (ctx.tree.nodes[c].throws) ctx.error(i);  // should have thrown
    return r;
  } catch (const NodeError& e) {
    if (e.id != c || !ctx.tree.nodes[c].throws) ctx.error(i);
    ctx.handle_catches.fetch_add(1, std::memory_order_relaxed);
    return e.result;
  }
}

// Waits for a group; it must rethrow iff one of its children threw, and then one of theirs.
void wait_group(Ctx& ctx, std::uint32_t i, WaitGroup& wg, bool any_throws) {
  try {
    wg.wait();
    if (any_throws) ctx.error(i);
  } catch (const NodeError& e) {
    if (e.id >= ctx.tree.nodes.size() || ctx.tree.nodes[e.id].parent != i ||
        !ctx.tree.nodes[e.id].throws || e.id == 0) {
      ctx.error(i);
    }
    ctx.group_catches.fetch_add(1, std::memory_order_relaxed);
  }
}

std::uint64_t run_node(Ctx& ctx, std::uint32_t i) {
  const Node& n = ctx.tree.nodes[i];
  ctx.occ.enter();
  ctx.ran[i].fetch_add(1, std::memory_order_relaxed);
  for (std::uint32_t s = n.spin; s > 0; --s) std::atomic_signal_fence(std::memory_order_seq_cst);
  if (n.block == Block::before) blocking_call(ctx, i);

  std::vector<std::uint64_t> got(n.count, 0);
  // A spawn is a safe point (--preempt safepoint, the default): a task whose slice ran out yields
  // its worker there, so it is counted out across the call. (Under TSan, where every tree runs
  // for many 10 ms slices, a spawn counted in gave a peak of 9 tasks on 8 workers.)
  auto spawn_child = [&ctx](std::uint32_t c) {
    ctx.occ.leave();
    auto handle = spawn([&ctx, c] { return run_node(ctx, c); });
    ctx.occ.enter();
    return handle;
  };
  auto go_child = [&ctx](WaitGroup& wg, std::uint32_t c) {
    ctx.occ.leave();
    wg.go([&ctx, c] { run_node(ctx, c); });
    ctx.occ.enter();
  };

  switch (n.mode) {
    case Mode::leaf:
      if (n.block == Block::between) blocking_call(ctx, i);
      break;
    case Mode::handles:
    case Mode::handles_reverse: {
      std::vector<JoinHandle<std::uint64_t>> hs;
      hs.reserve(n.count);
      for (std::uint32_t k = 0; k < n.count; ++k) hs.push_back(spawn_child(n.first + k));
      if (n.block == Block::between) blocking_call(ctx, i);
      ctx.occ.leave();
      for (std::uint32_t j = 0; j < n.count; ++j) {
        const std::uint32_t k = n.mode == Mode::handles ? j : n.count - 1 - j;
        got[k] = join_child(ctx, i, n.first + k, hs[k]);
      }
      ctx.occ.enter();
      break;
    }
    case Mode::group: {
      bool any_throws = false;
      WaitGroup wg;
      for (std::uint32_t k = 0; k < n.count; ++k) {
        go_child(wg, n.first + k);
        any_throws = any_throws || ctx.tree.nodes[n.first + k].throws;
      }
      if (n.block == Block::between) blocking_call(ctx, i);
      ctx.occ.leave();
      wait_group(ctx, i, wg, any_throws);
      ctx.occ.enter();
      for (std::uint32_t k = 0; k < n.count; ++k) got[k] = ctx.results[n.first + k];
      break;
    }
    case Mode::mixed: {
      // Even children through handles, odd ones through a group.
      bool any_throws = false;
      WaitGroup wg;
      std::vector<JoinHandle<std::uint64_t>> hs;
      for (std::uint32_t k = 0; k < n.count; ++k) {
        if (k % 2 == 0) {
          hs.push_back(spawn_child(n.first + k));
        } else {
          go_child(wg, n.first + k);
          any_throws = any_throws || ctx.tree.nodes[n.first + k].throws;
        }
      }
      if (n.block == Block::between) blocking_call(ctx, i);
      ctx.occ.leave();
      if (n.group_first) wait_group(ctx, i, wg, any_throws);
      for (std::uint32_t k = 0; k < n.count; k += 2) got[k] = join_child(ctx, i, n.first + k, hs[k / 2]);
      if (!n.group_first) wait_group(ctx, i, wg, any_throws);
      ctx.occ.enter();
      for (std::uint32_t k = 1; k < n.count; k += 2) got[k] = ctx.results[n.first + k];
      break;
    }
    case Mode::dropped: {
      {
        std::vector<JoinHandle<std::uint64_t>> hs;
        for (std::uint32_t k = 0; k < n.count; ++k) hs.push_back(spawn_child(n.first + k));
        if (n.block == Block::between) blocking_call(ctx, i);
        ctx.occ.leave();
      }  // the destructors join
      ctx.occ.enter();
      for (std::uint32_t k = 0; k < n.count; ++k) got[k] = ctx.results[n.first + k];
      break;
    }
  }
  // A handle's result must be what the child stored: both paths deliver the same value.
  for (std::uint32_t k = 0; k < n.count; ++k) {
    if (got[k] != ctx.results[n.first + k]) ctx.error(i);
  }
  if (n.block == Block::after) blocking_call(ctx, i);

  std::uint64_t sum = n.value;
  for (std::uint32_t k = 0; k < n.count; ++k) sum += (k + 1) * got[k];
  const std::uint64_t r = mix64(sum);
  ctx.results[i] = r;
  ctx.finished.fetch_add(1, std::memory_order_relaxed);
  ctx.occ.leave();
  if (n.throws) throw NodeError(i, r);
  return r;
}

// ---- cases -----------------------------------------------------------------------------------

struct Case {
  std::string scheduler;
  unsigned threads;
  ParamValues params;
  std::string label;  // for the test name
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.scheduler << " x" << c.threads;
  for (const auto& [k, v] : c.params) *os << " --" << k << "=" << v;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const unsigned counts[] = {1u, 2u, 3u, 8u};
  // Every in-process scheduler with its defaults. External programs (go-runtime) have no make.
  for (const auto& s : scheduler_registry()) {
    if (s.kind != SchedulerKind::in_process) continue;
    for (unsigned t : counts) {
      if (s.single_threaded && t != 1) continue;
      cases.push_back({s.name, t, {}, "default"});
    }
  }
  // steal-half's variants: tiny queues (overflow all the time), Go's FIFO order without
  // runnext, other steal amounts, no hand-off and the eager one, runnext never stolen, the
  // global check always and never, no spare threads for hand-offs, no spinning (every new task
  // wakes a thread), runnext pops counted.
  const std::vector<std::pair<std::string, ParamValues>> variants = {
      {"cap2", {{"capacity", "2"}}},
      {"cap2_fifo_norunnext", {{"capacity", "2"}, {"local-order", "fifo"}, {"runnext", "off"}}},
      {"steal_one_cap4", {{"steal-amount", "one"}, {"capacity", "4"}}},
      {"steal_all", {{"steal-amount", "all"}}},
      {"no_handoff", {{"handoff", "off"}}},
      {"eager_handoff", {{"handoff", "eager"}}},
      {"no_runnext_steals", {{"steal-runnext", "off"}}},
      {"global_check_1_cap4", {{"global-check", "1"}, {"capacity", "4"}}},
      {"global_check_0", {{"global-check", "0"}}},
      {"max_threads_eq_threads", {{"max-threads", "="}}},  // "=": the thread count
      {"no_spinning", {{"spinning", "off"}}},
      {"no_spinning_cap2_no_handoff_spares", {{"spinning", "off"}, {"capacity", "2"}, {"max-threads", "="}}},
      {"runnext_tick_count", {{"runnext-tick", "count"}}},
  };
  for (const auto& [label, params] : variants) {
    for (unsigned t : counts) cases.push_back({"steal-half", t, params, label});
  }
  for (unsigned t : counts) cases.push_back({"fair", t, {{"local-order", "fifo"}}, "fifo"});
  for (unsigned t : counts) cases.push_back({"central", t, {{"order", "lifo"}}, "lifo"});
  return cases;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// A worker counts a task executed after the task's last visible action, so the count may trail
// run() briefly; settled_counters waits for it. A backend that does not measure it has nothing
// to wait for.
bool every_task_counted(const CounterSet& k) {
  return !k.has(Counter::tasks_executed) || k[Counter::tasks_executed] == k[Counter::tasks_spawned];
}

class RandomSpawnTrees : public ::testing::TestWithParam<Case> {};

TEST_P(RandomSpawnTrees, EveryTaskOnceCorrectResultsExceptionsDelivered) {
  Case c = GetParam();
  for (auto& [k, v] : c.params) {
    if (v == "=") v = std::to_string(c.threads);
  }
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::uint64_t base_seed = std::hash<std::string>{}(info->name());
  base_seed = std::strtoull(env_or("SCHEDLAB_STRESS_SEED", std::to_string(base_seed)).c_str(), nullptr, 10);
  // 60 trees at scale 1; the count shrinks with the square root of the scale (about 19 in
  // Debug and ASan, 8 under TSan), because blocking sleeps and os-threads' clone() calls cost
  // the same in every build.
  const int trees = std::max(4, static_cast<int>(60 * std::sqrt(stress::scale())));
  constexpr std::uint32_t kMaxNodes = 3000;

  auto sched = make_scheduler(c.scheduler, c.threads, c.params);
  const bool fiber = dynamic_cast<FiberRuntime*>(sched.get()) != nullptr;

  std::atomic<Ctx*> current{nullptr};
  Watchdog dog(std::string(info->test_suite_name()) + "." + info->name(), stress::watchdog_seconds(),
               [&current] {
                 Ctx* ctx = current.load();
                 return ctx == nullptr ? std::string("between trees")
                                       : std::to_string(ctx->finished.load()) + " of " +
                                             std::to_string(ctx->tree.nodes.size()) + " nodes finished";
               });

  std::uint64_t nodes_total = 0, blocking_total = 0, throws_total = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < trees; ++k) {
    const std::uint64_t seed = base_seed + static_cast<std::uint64_t>(k);
    const Tree tree = make_tree(seed, kMaxNodes);
    const std::string where = "tree " + std::to_string(k) + " (SCHEDLAB_STRESS_SEED=" +
                              std::to_string(base_seed) + ", seed " + std::to_string(seed) + ", " +
                              std::to_string(tree.nodes.size()) + " nodes" +
                              (tree.nodes[0].throws ? ", the root throws)" : ")");
    dog.phase(where);
    Ctx ctx(tree);
    ctx.occ.limit = fiber ? static_cast<int>(c.threads) : 0;
    current.store(&ctx);

    const CounterSet before = sched->counters();
    std::optional<std::uint64_t> root_result;
    bool root_threw = false;
    try {
      sched->run([&] { root_result = run_node(ctx, 0); });
    } catch (const NodeError& e) {
      root_threw = true;
      if (e.id != 0) ctx.error(0);
      root_result = e.result;
    } catch (const std::exception& e) {
      current.store(nullptr);
      FAIL() << where << ": run() threw " << e.what();
    }
    current.store(nullptr);

    nodes_total += tree.nodes.size();
    blocking_total += tree.blocking_calls;
    for (const Node& n : tree.nodes) throws_total += n.throws;

    std::uint32_t bad_ran = 0, bad_calls = 0, bad_results = 0, first_bad = UINT32_MAX;
    for (std::uint32_t i = 0; i < tree.nodes.size(); ++i) {
      const bool ran_ok = ctx.ran[i].load() == 1;
      const bool calls_ok = ctx.calls[i].load() == (tree.nodes[i].block != Block::none ? 1 : 0);
      const bool result_ok = ctx.results[i] == tree.expect[i];
      bad_ran += !ran_ok;
      bad_calls += !calls_ok;
      bad_results += !result_ok;
      if ((!ran_ok || !calls_ok || !result_ok) && first_bad == UINT32_MAX) first_bad = i;
    }
    ASSERT_EQ(bad_ran, 0u) << where << ": nodes run zero or several times; first " << first_bad;
    ASSERT_EQ(bad_calls, 0u) << where << ": nodes whose blocking call ran zero or several times";
    ASSERT_EQ(bad_results, 0u) << where << ": wrong node results; first " << first_bad;
    ASSERT_EQ(root_result.value_or(0), tree.expect[0]) << where << ": root checksum";
    ASSERT_EQ(root_threw, tree.nodes[0].throws) << where << ": run() rethrows the root's exception";
    ASSERT_EQ(ctx.errors.load(), 0u) << where << ": a join or wait delivered the wrong value or "
                                     << "exception; first at node " << ctx.first_error_node.load();
    ASSERT_EQ(ctx.handle_catches.load(), tree.handle_catches) << where;
    ASSERT_EQ(ctx.group_catches.load(), tree.group_catches) << where;
    ASSERT_EQ(ctx.occ.violations.load(), 0)
        << where << ": more tasks ran at once than worker threads (peak " << ctx.occ.peak.load() << ")";

    const CounterSet k2 = stress::settled_counters(*sched, before, every_task_counted);
    if (k2.has(Counter::tasks_spawned)) {
      ASSERT_EQ(k2[Counter::tasks_spawned], tree.nodes.size()) << where << ": the root and one task per other node";
    }
    if (k2.has(Counter::tasks_executed)) {
      ASSERT_EQ(k2[Counter::tasks_executed], k2[Counter::tasks_spawned]) << where;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("  %d trees, %llu tasks, %llu blocking calls, %llu exceptions in %.2f s\n", trees,
              static_cast<unsigned long long>(nodes_total), static_cast<unsigned long long>(blocking_total),
              static_cast<unsigned long long>(throws_total), secs);
}

INSTANTIATE_TEST_SUITE_P(Registry, RandomSpawnTrees, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) {
                           std::string name = info.param.scheduler + "_" + info.param.label + "_" +
                                              std::to_string(info.param.threads) + "threads";
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// Reproducer (found by RandomSpawnTrees under tbb): a root that throws still counts as executed,
// so tasks_executed = tasks_spawned after every run, whatever the root did.
TEST(RootException, CountsTheRootAsExecutedUnderEveryScheduler) {
  Watchdog dog("RootException");
  for (const auto& s : scheduler_registry()) {
    if (s.kind != SchedulerKind::in_process) continue;
    dog.phase(s.name);
    auto sched = make_scheduler(s.name, 2);
    const CounterSet before = sched->counters();
    EXPECT_THROW(sched->run([] {
      auto h = spawn([] { return 1; });
      h.join();
      throw NodeError(0, 0);
    }),
                 NodeError);
    const CounterSet k = stress::settled_counters(*sched, before, every_task_counted);
    if (k.has(Counter::tasks_spawned)) {
      EXPECT_EQ(k[Counter::tasks_spawned], 2u) << s.name;
    }
    if (k.has(Counter::tasks_executed)) {
      EXPECT_EQ(k[Counter::tasks_executed], 2u) << s.name;
    }
  }
}

// Throws from `depth` frames down, each holding an array ASan guards with redzones.
[[gnu::noinline]] int throw_from_depth(int depth) {
  volatile char frame[128];
  frame[depth % sizeof frame] = static_cast<char>(depth);
  if (depth == 0) throw NodeError(0, 0);
  return throw_from_depth(depth - 1) + frame[depth % sizeof frame];
}

// Reproducer (the ASan build, Boost.Fiber backends; see boost_fiber.cpp, "ASan and Boost.Fiber's
// stack switches"): a root that catches an exception thrown deep in its fiber, spawns, joins
// and throws again. Before the backend told ASan which stack it ran on, the first throw left
// its frames' poison behind, and the second was reported inside ASan's own
// __asan_handle_no_return (in each of the three runs tried); the same poison reached pick_next at a
// root's end in CI. Every run must rethrow its root's exception and the next run still work.
TEST(RootException, ARootThrownFromDeepLeavesTheNextRunWorking) {
  Watchdog dog("RootException deep");
  for (const auto& s : scheduler_registry()) {
    if (s.kind != SchedulerKind::in_process) continue;
    for (unsigned threads : {1u, 3u}) {
      dog.phase(s.name + " x" + std::to_string(threads));
      auto sched = make_scheduler(s.name, threads);
      for (int depth = 0; depth < 64; depth += 3) {
        EXPECT_THROW(sched->run([depth] {
          try {
            throw_from_depth(depth);
          } catch (const NodeError&) {
          }
          std::vector<JoinHandle<int>> children;
          for (int c = 0; c < 8; ++c) children.push_back(spawn([c] { return c; }));
          for (auto& h : children) h.join();
          throw_from_depth(64 - depth);
        }),
                     NodeError)
            << s.name;
        int value = 0;
        sched->run([&value] { value = spawn([] { return 7; }).join(); });
        EXPECT_EQ(value, 7) << s.name << " after a root threw from depth " << depth;
      }
    }
  }
}

// The completion protocol (runtime/policy_runtime.hpp, publish_done): a parent joins a child
// that finishes on another worker at about the moment the parent, its fiber just saved,
// registers itself as the child's waiter. Both orders of that race happen here thousands of times: the finisher
// first (its CAS to kDone wins, the waiter's CAS fails and the waiter requeues itself) and the
// waiter first (the finisher then publishes kDone with a plain store and readies the waiter).
// Random spins on both sides move the child's end across the parent's join. Every join must
// return the child's value and every task run once; a lost wake-up leaves a parent suspended
// for good, which the runtime reports as a deadlock (and the watchdog catches any hang).
TEST(CompletionRace, JoinsRacingTheirChildrensEndDeliverEveryResult) {
  Watchdog dog("CompletionRace");
  const std::uint64_t joins_per_parent = stress::scaled(20000, 200);
  constexpr std::uint32_t kParents = 4;
  for (const char* scheduler : {"fair", "central", "steal-half"}) {
    for (unsigned threads : {2u, 3u}) {
      dog.phase(std::string(scheduler) + " x" + std::to_string(threads));
      auto sched = make_scheduler(scheduler, threads);
      std::atomic<std::uint64_t> wrong{0}, ran{0};
      sched->run([&] {
        WaitGroup parents;
        for (std::uint32_t p = 0; p < kParents; ++p) {
          parents.go([&, p] {
            Rng rng(mix64(p + 1000 * threads));
            for (std::uint64_t j = 0; j < joins_per_parent; ++j) {
              const std::uint64_t want = mix64(j ^ (std::uint64_t{p} << 40));
              const std::uint32_t child_spin = rng.below(64), parent_spin = rng.below(64);
              auto child = spawn([&ran, want, child_spin] {
                for (std::uint32_t i = 0; i < child_spin; ++i) std::atomic_signal_fence(std::memory_order_seq_cst);
                ran.fetch_add(1, std::memory_order_relaxed);
                return want;
              });
              for (std::uint32_t i = 0; i < parent_spin; ++i) std::atomic_signal_fence(std::memory_order_seq_cst);
              if (child.join() != want) wrong.fetch_add(1, std::memory_order_relaxed);
            }
          });
        }
        parents.wait();
      });
      const std::uint64_t joins = kParents * joins_per_parent;
      EXPECT_EQ(wrong.load(), 0u) << scheduler << " x" << threads;
      EXPECT_EQ(ran.load(), joins) << scheduler << " x" << threads;
      const CounterSet k = stress::settled_counters(*sched, CounterSet{}, every_task_counted);
      EXPECT_EQ(k[Counter::tasks_executed], joins + kParents + 1) << scheduler << " x" << threads;
      // Some joins found their child unfinished and suspended: the race was there to be run.
      EXPECT_GT(k[Counter::suspensions], 0u) << scheduler << " x" << threads;
    }
  }
}

// The generator is deterministic: a reported seed replays the same tree.
TEST(RandomSpawnTreeGenerator, SameSeedSameTree) {
  const Tree a = make_tree(12345, 3000), b = make_tree(12345, 3000), c = make_tree(12346, 3000);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  EXPECT_EQ(a.expect, b.expect);
  EXPECT_NE(a.expect[0], c.expect[0]);
  EXPECT_GT(a.nodes.size(), 500u) << "trees are big enough to be interesting";
  EXPECT_GT(a.handle_catches + a.group_catches, 0u);
  EXPECT_GT(a.blocking_calls, 0u);
}

}  // namespace
}  // namespace schedlab
