// Stress tests of steal-half's queues: every item is delivered exactly once.
//
// (One file of ~800 lines on purpose: the races it drives share one model of the queue's
// operations and one exactly-once ledger; split, each part would repeat them.)
//
//   LocalRunQueueStress   one owner (push at the tail, pop LIFO, FIFO or both; a full queue
//                         moves its older half plus the new item to a global queue, as the
//                         policy's overflow does) against 3 thieves that steal from the owner
//                         and from each other (steal_from: half, one or all), drain their own
//                         queues and take batches from the global queue (globrunqget's sizing).
//                         Random spins and yields widen every race window; capacities 2 and 4
//                         wrap around and overflow all the time. Task objects are recycled, so
//                         a stale pointer read by a thief whose CAS wrongly succeeded shows up
//                         as a duplicate. 10^7 queue operations per configuration (scaled).
//   GlobalQueueStress     the real global queue, inside the steal-half runtime: several Ps
//                         spawn bursts into tiny local queues (capacity 2 or 4), so overflow
//                         moves work to the global queue constantly while idle Ps take it back
//                         in batches, with the 1-in-N global check at 1, 61 or never.
//   HandoffStress         tasks calling schedlab::blocking() with 1 or 2 Ps and few or many
//                         spare threads (--max-threads), --handoff lazy (the monitor retakes
//                         some calls' Ps) and eager (every call hands its P over), so a
//                         returning task takes its own P back, another idle P, or waits in the
//                         global queue while its thread parks.
//                         Checks exactly-once, and that no more tasks run at once than there
//                         are Ps.
//   RunNextStress         runnext's asymmetric protocol (runnext.hpp): an owner putting and
//                         taking with plain stores against 2 thieves that take the slot with
//                         a membarrier and a CAS; 64 task objects recycled, so a task run twice
//                         shows up in the ledger even after its object was reused.
//   StealHalfLostWakeup   the minimal reproducer of the lost wake-up HandoffStress found (two
//                         threads parking with work queued when startm fails at max-threads),
//                         for the eager hand-off and for the monitor's.
//   StealHalfSpinningProtocol  a busy P queues work and never yields; the idle P must take it
//                         (the store-load pair of the spinning protocol with plain pushes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api.hpp"
#include "cpu_relax.hpp"
#include "registry.hpp"
#include "runtime/runtime.hpp"
#include "runtime/task_list.hpp"
#include "steal_half/global_batch.hpp"
#include "steal_half/process_barrier.hpp"
#include "steal_half/run_queue.hpp"
#include "steal_half/runnext.hpp"
#include "stress_util.hpp"

namespace schedlab {
namespace {

using stress::Rng;
using stress::Watchdog;

std::string current_test() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

// ============================================================================================
// LocalRunQueue: owner vs 3 thieves, with overflow to a global queue.
// ============================================================================================

enum class OwnerOrder { lifo, fifo, mixed };

struct QueueCase {
  std::uint32_t capacity;         // the owner's queue
  std::uint32_t thief_capacity;   // the thieves' queues (a smaller one exercises the clamp)
  OwnerOrder order;
  StealAmount steal;
};

void PrintTo(const QueueCase& c, std::ostream* os) {
  *os << "cap" << c.capacity << "/" << c.thief_capacity << " order " << static_cast<int>(c.order)
      << " steal " << static_cast<int>(c.steal);
}

constexpr int kThieves = 3;
constexpr std::uint32_t kPool = 1u << 16;  // recycled Task objects

// Everything the threads share. Item ids live in Task::backend; a Task is recycled once its
// item was delivered (pool_busy back to 0).
struct QueueWorld {
  QueueWorld(const QueueCase& c, std::uint64_t target_ops_)
      : target_ops(target_ops_), items(target_ops_ / 2), delivered(items), pool(kPool), pool_busy(kPool),
        owner(c.capacity) {
    for (int i = 0; i < kThieves; ++i) thieves.push_back(std::make_unique<LocalRunQueue>(c.thief_capacity));
  }

  // The owner stops pushing once every thread together has made target_ops queue operations
  // (or after `items` pushes, which cannot come first: each item costs a push and a take).
  const std::uint64_t target_ops;
  const std::uint64_t items;
  std::atomic<std::uint64_t> ops{0};     // flushed by every thread every 64 operations
  std::atomic<std::uint64_t> pushed{0};  // items the owner pushed; ids 0..pushed-1
  std::vector<std::atomic<std::uint8_t>> delivered;  // per item: times delivered
  std::vector<Task> pool;
  std::vector<std::atomic<std::uint8_t>> pool_busy;
  LocalRunQueue owner;
  std::vector<std::unique_ptr<LocalRunQueue>> thieves;

  // The global queue, as steal-half keeps it: an intrusive list behind a mutex, plus a size
  // mirror read without the lock.
  std::mutex global_mutex;
  TaskList global;
  std::atomic<std::uint32_t> global_size{0};

  std::atomic<std::uint64_t> total{0};
  std::atomic<std::uint64_t> duplicates{0};
  std::atomic<std::uint64_t> bad_pointers{0};
  std::atomic<std::uint64_t> first_duplicate{UINT64_MAX};
  std::atomic<bool> stop{false};

  void deliver(Task* t) {
    if (t < pool.data() || t >= pool.data() + pool.size()) {
      bad_pointers.fetch_add(1);
      return;
    }
    const auto id = reinterpret_cast<std::uintptr_t>(t->backend);
    const std::size_t slot = static_cast<std::size_t>(t - pool.data());
    if (id >= items) {
      bad_pointers.fetch_add(1);
      return;
    }
    if (delivered[id].fetch_add(1, std::memory_order_relaxed) != 0) {
      duplicates.fetch_add(1);
      std::uint64_t none = UINT64_MAX;
      first_duplicate.compare_exchange_strong(none, id);
    }
    total.fetch_add(1, std::memory_order_relaxed);
    pool_busy[slot].store(0, std::memory_order_release);
  }

  // Go's globrunqget, sized by the policy's own rule (global_batch_size, the owner and the
  // thieves being the Ps); the first is returned, the rest go to q, which is empty on every path
  // that asks for more than one.
  Task* global_get(LocalRunQueue& q, std::uint32_t max) {
    if (global_size.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lock(global_mutex);
    const auto size = static_cast<std::uint32_t>(global.size());
    if (size == 0) return nullptr;
    const std::uint32_t n = global_batch_size(size, kThieves + 1, max, q.capacity());
    global_size.fetch_sub(n, std::memory_order_seq_cst);
    Task* first = global.pop_front();
    for (std::uint32_t i = 1; i < n; ++i) {
      Task* t = global.pop_front();
      if (!q.push(*t)) {
        // Cannot happen: q was empty and n <= capacity/2. Deliver it so the count stays exact,
        // and fail loudly.
        ADD_FAILURE() << "push into an empty queue failed";
        deliver(t);
      }
    }
    return first;
  }
};

struct OwnerStats {
  std::uint64_t ops = 0, pushes = 0, pops = 0, overflows = 0, global_takes = 0;
};

// The owner: pushes every item once, pops in phases (push-heavy, then pop-heavy) so that the
// queue is sometimes full and sometimes empty, overflows like the policy, and looks at the
// global queue every 61st operation and whenever its queue is empty.
void run_owner(QueueWorld& w, const QueueCase& c, OwnerStats& st) {
  Rng rng(0xC0FFEE ^ c.capacity);
  std::vector<Task*> overflow(c.capacity / 2);
  std::uint32_t cursor = 0;

  auto pop_one = [&]() -> bool {
    LocalOrder o = c.order == OwnerOrder::lifo   ? LocalOrder::lifo
                   : c.order == OwnerOrder::fifo ? LocalOrder::fifo
                   : (rng.next() & 1)            ? LocalOrder::lifo
                                                 : LocalOrder::fifo;
    Task* t = w.owner.pop(o);
    ++st.ops;
    if (t == nullptr) return false;
    ++st.pops;
    w.deliver(t);
    return true;
  };
  // One step of consuming work: the owner's queue, else the global queue.
  auto consume = [&] {
    if (pop_one()) return;
    if (Task* t = w.global_get(w.owner, 0)) {
      ++st.global_takes;
      ++st.ops;
      w.deliver(t);
    }
  };
  auto push = [&](Task& t) {
    for (;;) {
      ++st.ops;
      if (w.owner.push(t)) {
        ++st.pushes;
        return;
      }
      const std::uint32_t n = w.owner.take_older_half(overflow.data());
      ++st.ops;
      if (n == 0) continue;  // a thief made room
      ++st.overflows;
      stress::random_delay(rng);  // between taking the half and publishing it
      for (std::uint32_t i = 0; i + 1 < n; ++i) overflow[i]->next = overflow[i + 1];
      overflow[n - 1]->next = &t;
      std::lock_guard lock(w.global_mutex);
      w.global.push_back_chain(*overflow[0], t, n + 1);
      w.global_size.fetch_add(n + 1, std::memory_order_seq_cst);
      return;
    }
  };

  bool push_heavy = true;
  std::uint32_t phase_left = 0;
  std::uint64_t id = 0;
  std::uint64_t flushed = 0;
  for (std::uint64_t round = 0; id < w.items; ++round) {
    if (st.ops - flushed >= 64) {
      w.ops.fetch_add(st.ops - flushed, std::memory_order_relaxed);
      flushed = st.ops;
      if (w.ops.load(std::memory_order_relaxed) >= w.target_ops) break;
    }
    // Push-heavy rounds push a burst, sometimes as long as the queue, so that even a queue of
    // 256 fills up and overflows; pop-heavy rounds push one and pop one or two.
    const std::uint32_t burst =
        push_heavy ? 1 + rng.below(rng.chance(5) ? c.capacity + 1 : 4) : 1;
    for (std::uint32_t b = 0; b < burst && id < w.items; ++b, ++id) {
      // A free Task from the pool; consume while every one is in flight.
      Task* t = nullptr;
      for (std::uint32_t scanned = 0; t == nullptr; ++scanned) {
        const std::uint32_t s = cursor++ & (kPool - 1);
        if (w.pool_busy[s].load(std::memory_order_acquire) == 0) {
          t = &w.pool[s];
          w.pool_busy[s].store(1, std::memory_order_relaxed);
        } else if (scanned % kPool == kPool - 1) {
          consume();
        }
      }
      t->backend = reinterpret_cast<void*>(static_cast<std::uintptr_t>(id));
      t->next = nullptr;
      push(*t);
    }

    if (phase_left == 0) {
      push_heavy = !push_heavy;
      phase_left = 1 + rng.below(2 * c.capacity + 64);
    }
    --phase_left;
    const std::uint32_t pops = push_heavy ? (rng.chance(20) ? 1 : 0) : 1 + rng.below(2);
    for (std::uint32_t i = 0; i < pops; ++i) {
      if (!pop_one()) break;
    }
    if (round % 61 == 0) {
      if (Task* g = w.global_get(w.owner, 1)) {  // the global check takes one
        ++st.global_takes;
        w.deliver(g);
      }
      ++st.ops;
    }
    if (w.owner.empty()) {
      if (Task* g = w.global_get(w.owner, 0)) {
        ++st.global_takes;
        w.deliver(g);
      }
      ++st.ops;
    }
    stress::random_delay(rng);
  }
  while (pop_one()) {
  }
  w.ops.fetch_add(st.ops - flushed, std::memory_order_relaxed);
  w.pushed.store(id);
}

struct ThiefStats {
  std::uint64_t ops = 0, steals = 0, stolen = 0, pops = 0, global_takes = 0;
};

void run_thief(QueueWorld& w, const QueueCase& c, int me, ThiefStats& st) {
  Rng rng(0x7E1F ^ static_cast<std::uint64_t>(me) * 977);
  LocalRunQueue& mine = *w.thieves[static_cast<std::size_t>(me)];
  std::uint32_t misses = 0;
  std::uint64_t flushed = 0;
  while (!w.stop.load(std::memory_order_relaxed)) {
    if (st.ops - flushed >= 64) {
      w.ops.fetch_add(st.ops - flushed, std::memory_order_relaxed);
      flushed = st.ops;
    }
    // Run what we hold (the thief is the owner of its own queue).
    for (;;) {
      const LocalOrder o = (rng.next() & 1) ? LocalOrder::lifo : LocalOrder::fifo;
      Task* t = mine.pop(o);
      ++st.ops;
      if (t == nullptr) break;
      ++st.pops;
      w.deliver(t);
      stress::random_delay(rng);
    }
    // Empty: the global queue sometimes, else steal from the owner or another thief.
    if (rng.chance(25)) {
      ++st.ops;
      if (Task* t = w.global_get(mine, 0)) {
        ++st.global_takes;
        w.deliver(t);
        misses = 0;
        continue;
      }
    }
    const std::uint32_t v = rng.below(2 * kThieves);
    LocalRunQueue* victim = v < kThieves ? &w.owner : w.thieves[v - kThieves].get();
    if (victim == &mine) victim = &w.owner;
    std::uint32_t moved = 0;
    stress::random_delay(rng);
    // Either order's choice of the task to run at once (run_queue.hpp), at random.
    const LocalOrder run_order = (rng.next() & 1) ? LocalOrder::lifo : LocalOrder::fifo;
    Task* t = mine.steal_from(*victim, c.steal, run_order, &moved);
    ++st.ops;
    if (t != nullptr) {
      if (moved == 0 || moved > mine.capacity()) ADD_FAILURE() << "steal moved " << moved;
      ++st.steals;
      st.stolen += moved;
      w.deliver(t);
      misses = 0;
    } else if (++misses % 64 == 0) {
      std::this_thread::yield();  // two cores, four threads: let the owner run
    }
  }
}

class LocalRunQueueStress : public ::testing::TestWithParam<QueueCase> {};

TEST_P(LocalRunQueueStress, OwnerAgainstThreeThievesDeliversEveryItemExactlyOnce) {
  const QueueCase c = GetParam();
  // 10^7 queue operations per configuration at scale 1, counting every push, pop, steal,
  // overflow and global take by any thread, successful or not.
  QueueWorld w(c, stress::scaled(1e7, 100000));
  Watchdog dog(current_test(), stress::watchdog_seconds(), [&w] {
    return std::to_string(w.total.load()) + " items delivered, " + std::to_string(w.pushed.load()) +
           " pushed (0: still pushing)";
  });

  OwnerStats os;
  std::vector<ThiefStats> ts(kThieves);
  std::vector<std::thread> thieves;
  for (int i = 0; i < kThieves; ++i) {
    thieves.emplace_back([&, i] { run_thief(w, c, i, ts[static_cast<std::size_t>(i)]); });
  }
  const auto start = std::chrono::steady_clock::now();
  run_owner(w, c, os);
  const std::uint64_t items = w.pushed.load();

  // The thieves drain what is left in their queues and the global queue. A lost item shows as
  // no progress: stop after 10 s without a delivery and report the missing ones.
  std::uint64_t last = w.total.load();
  auto last_change = std::chrono::steady_clock::now();
  while (w.total.load() < items) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::uint64_t now = w.total.load();
    if (now != last) {
      last = now;
      last_change = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_change > std::chrono::seconds(10)) {
      break;
    }
  }
  w.stop.store(true);
  for (auto& th : thieves) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::uint64_t ops = os.ops, steals = 0, stolen = 0, global_takes = os.global_takes;
  for (const ThiefStats& s : ts) {
    ops += s.ops;
    steals += s.steals;
    stolen += s.stolen;
    global_takes += s.global_takes;
  }
  std::uint64_t missing = 0, twice = 0, first_missing = UINT64_MAX;
  for (std::uint64_t i = 0; i < w.items; ++i) {
    const unsigned n = w.delivered[i].load();
    if (i >= items) {  // never pushed: must never have been delivered
      twice += n != 0;
      continue;
    }
    if (n == 0) {
      ++missing;
      if (first_missing == UINT64_MAX) first_missing = i;
    }
    twice += n > 1;
  }
  std::ostringstream summary;
  summary << items << " items, " << ops << " queue operations in " << secs << " s: owner pushes "
          << os.pushes << ", owner pops " << os.pops << ", overflows " << os.overflows
          << ", steals " << steals << " (" << stolen << " tasks), global takes " << global_takes;
  RecordProperty("summary", summary.str());
  std::printf("  %s\n", summary.str().c_str());

  EXPECT_EQ(w.bad_pointers.load(), 0u) << "pointers that are not a queued task";
  EXPECT_EQ(missing, 0u) << "items never delivered (lost); first id " << first_missing;
  EXPECT_EQ(twice, 0u) << "items delivered more than once; first id " << w.first_duplicate.load();
  EXPECT_EQ(w.total.load(), items);
  EXPECT_TRUE(w.owner.empty());
  EXPECT_EQ(w.global.size(), 0u);
  // The configuration really exercised what it is named for.
  EXPECT_GT(steals, 0u);
  EXPECT_GT(os.overflows, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Configurations, LocalRunQueueStress,
    ::testing::Values(QueueCase{2, 2, OwnerOrder::lifo, StealAmount::half},
                      QueueCase{2, 2, OwnerOrder::fifo, StealAmount::half},
                      QueueCase{2, 2, OwnerOrder::mixed, StealAmount::half},
                      QueueCase{4, 4, OwnerOrder::lifo, StealAmount::half},
                      QueueCase{4, 4, OwnerOrder::fifo, StealAmount::half},
                      QueueCase{4, 4, OwnerOrder::mixed, StealAmount::one},
                      QueueCase{4, 4, OwnerOrder::mixed, StealAmount::all},
                      QueueCase{256, 256, OwnerOrder::lifo, StealAmount::half},
                      QueueCase{256, 256, OwnerOrder::fifo, StealAmount::half},
                      QueueCase{256, 256, OwnerOrder::mixed, StealAmount::all},
                      QueueCase{256, 4, OwnerOrder::mixed, StealAmount::half}),
    [](const auto& info) {
      const QueueCase& c = info.param;
      const char* order = c.order == OwnerOrder::lifo ? "lifo" : c.order == OwnerOrder::fifo ? "fifo" : "mixed";
      const char* steal = c.steal == StealAmount::half ? "half" : c.steal == StealAmount::one ? "one" : "all";
      std::string name = "cap" + std::to_string(c.capacity);
      if (c.thief_capacity != c.capacity) name += "_thiefcap" + std::to_string(c.thief_capacity);
      return name + "_" + order + "_steal" + steal;
    });

// ============================================================================================
// Helpers for the runtime-level tests.
// ============================================================================================

// Counts tasks running at once, conservatively: a task counts itself in only while it surely
// holds a processor and out before it may give it up (blocking, join, wait, return), so the
// count can never exceed the number of processors unless two tasks really ran on one.
struct Occupancy {
  explicit Occupancy(int limit_) : limit(limit_) {}
  const int limit;
  std::atomic<int> now{0};
  std::atomic<int> peak{0};
  std::atomic<int> violations{0};

  void enter() {
    const int n = now.fetch_add(1, std::memory_order_acq_rel) + 1;
    int p = peak.load(std::memory_order_relaxed);
    while (n > p && !peak.compare_exchange_weak(p, n, std::memory_order_relaxed)) {
    }
    if (n > limit) violations.fetch_add(1, std::memory_order_relaxed);
  }
  void leave() { now.fetch_sub(1, std::memory_order_acq_rel); }
};

bool global_queue_balanced(const CounterSet& k) {
  return k[Counter::global_pushes] == k[Counter::global_pops];
}

std::string describe(const ParamValues& p) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

// ============================================================================================
// The global queue, through the steal-half runtime.
// ============================================================================================

struct GlobalCase {
  unsigned threads;
  ParamValues params;
};

void PrintTo(const GlobalCase& c, std::ostream* os) {
  *os << "steal-half x" << c.threads << " " << describe(c.params);
}

class GlobalQueueStress : public ::testing::TestWithParam<GlobalCase> {};

// Every P spawns: producers each grow a ternary tree of tasks inside one WaitGroup (a task adds
// its children to the group it belongs to), so bursts of spawns overflow tiny local queues into
// the global queue from several Ps at once, and every P also takes batches back from it.
TEST_P(GlobalQueueStress, OverflowAndGlobalBatchesDeliverEveryTaskExactlyOnce) {
  const GlobalCase c = GetParam();
  auto sched = make_scheduler("steal-half", c.threads, c.params);
  const unsigned producers = 2 * c.threads + 1;
  const std::uint32_t per_producer = static_cast<std::uint32_t>(stress::scaled(40000, 500));
  const std::uint32_t total = producers * per_producer;
  std::vector<std::atomic<std::uint8_t>> ran(total);
  Occupancy occ(static_cast<int>(c.threads));
  std::atomic<std::uint64_t> executed{0};
  Watchdog dog(current_test(), stress::watchdog_seconds(), [&] {
    return std::to_string(executed.load()) + " of " + std::to_string(total) + " tasks ran";
  });

  struct Grow {
    static void node(WaitGroup& wg, std::vector<std::atomic<std::uint8_t>>& ran, Occupancy& occ,
                     std::atomic<std::uint64_t>& executed, std::uint32_t base, std::uint32_t n,
                     std::uint32_t i) {
      occ.enter();
      ran[base + i].fetch_add(1, std::memory_order_relaxed);
      executed.fetch_add(1, std::memory_order_relaxed);
      Rng rng(base + i);
      for (std::uint32_t k = 1; k <= 3; ++k) {
        const std::uint32_t child = 3 * i + k;
        if (child >= n) break;
        wg.go([&wg, &ran, &occ, &executed, base, n, child] {
          node(wg, ran, occ, executed, base, n, child);
        });
      }
      stress::random_delay(rng);
      occ.leave();
    }
  };

  const int runs = 3;  // the root arrives from outside through the global queue every run
  const CounterSet before = sched->counters();
  for (int run = 0; run < runs; ++run) {
    for (auto& r : ran) r.store(0, std::memory_order_relaxed);
    executed.store(0);
    dog.phase("run " + std::to_string(run));
    sched->run([&] {
      occ.enter();
      WaitGroup outer;
      for (unsigned p = 0; p < producers; ++p) {
        outer.go([&, p] {
          occ.enter();
          WaitGroup wg;
          const std::uint32_t base = p * per_producer;
          wg.go([&, base] { Grow::node(wg, ran, occ, executed, base, per_producer, 0); });
          occ.leave();
          wg.wait();
          occ.enter();
          occ.leave();
        });
      }
      occ.leave();
      outer.wait();
    });
    std::uint32_t wrong = 0, first_wrong = UINT32_MAX;
    for (std::uint32_t i = 0; i < total; ++i) {
      if (ran[i].load() != 1) {
        ++wrong;
        if (first_wrong == UINT32_MAX) first_wrong = i;
      }
    }
    ASSERT_EQ(wrong, 0u) << "tasks run zero or several times in run " << run << "; first "
                         << first_wrong << " ran " << int(ran[first_wrong].load()) << " times";
  }
  const CounterSet k = stress::settled_counters(*sched, before, global_queue_balanced);
  std::printf("  %u tasks x %d runs: overflows %llu, global pushes %llu, pops %llu, steals %llu\n",
              total, runs, static_cast<unsigned long long>(k[Counter::overflows]),
              static_cast<unsigned long long>(k[Counter::global_pushes]),
              static_cast<unsigned long long>(k[Counter::global_pops]),
              static_cast<unsigned long long>(k[Counter::steals]));
  EXPECT_EQ(occ.violations.load(), 0) << "more tasks ran at once than there are Ps (peak "
                                      << occ.peak.load() << ")";
  EXPECT_EQ(k[Counter::tasks_executed], k[Counter::tasks_spawned]);
  EXPECT_EQ(k[Counter::global_pushes], k[Counter::global_pops])
      << "the global queue is empty after every run: everything pushed was taken";
  EXPECT_GT(k[Counter::overflows], 0u) << "the configuration never overflowed to the global queue";
}

std::vector<GlobalCase> global_cases() {
  std::vector<GlobalCase> r;
  for (unsigned t : {1u, 2u, 3u, 8u}) {
    r.push_back({t, {{"capacity", "2"}}});
    r.push_back({t, {{"capacity", "4"}, {"global-check", "1"}, {"local-order", "fifo"}}});
  }
  r.push_back({2, {{"capacity", "2"}, {"global-check", "0"}, {"runnext", "off"}}});
  r.push_back({3, {{"capacity", "4"}, {"steal-amount", "one"}, {"runnext", "off"}}});
  r.push_back({8, {{"capacity", "2"}, {"steal-amount", "all"}, {"local-order", "fifo"}}});
  return r;
}

std::string case_name(const std::string& prefix, unsigned threads, const ParamValues& p) {
  std::string name = prefix + std::to_string(threads) + "P";
  for (const auto& [k, v] : p) name += "_" + k + "_" + v;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(StealHalf, GlobalQueueStress, ::testing::ValuesIn(global_cases()),
                         [](const auto& info) { return case_name("", info.param.threads, info.param.params); });

// ============================================================================================
// The hand-off path: schedlab::blocking() with 1 or 2 Ps.
// ============================================================================================

struct HandoffCase {
  unsigned threads;
  unsigned max_threads;
  ParamValues extra;
};

void PrintTo(const HandoffCase& c, std::ostream* os) {
  *os << "steal-half x" << c.threads << " max-threads " << c.max_threads << " " << describe(c.extra);
}

class HandoffStress : public ::testing::TestWithParam<HandoffCase> {};

// Each task makes 1 to 3 blocking calls (a tiny sleep, a yield or a short spin), with compute
// between them, and some spawn a child before a call and join it after, so the task resumes
// on another thread and P. Plan is deterministic per task, so the test knows how many calls
// each task must have made.
TEST_P(HandoffStress, BlockingTasksRunExactlyOnceAndNeverOversubscribeThePs) {
  const HandoffCase c = GetParam();
  ParamValues params = c.extra;
  params["max-threads"] = std::to_string(c.max_threads);
  auto sched = make_scheduler("steal-half", c.threads, params);
  const std::uint32_t tasks = static_cast<std::uint32_t>(stress::scaled(50000, 300));
  // Per task: body started, blocking bodies run, body finished; children likewise.
  std::vector<std::atomic<std::uint8_t>> started(tasks), finished(tasks), child_ran(tasks);
  std::vector<std::atomic<std::uint8_t>> calls(tasks);
  std::vector<std::uint8_t> planned_calls(tasks);
  std::vector<std::uint8_t> has_child(tasks);
  for (std::uint32_t i = 0; i < tasks; ++i) {
    Rng rng(i * 31 + c.threads);
    planned_calls[i] = static_cast<std::uint8_t>(1 + rng.below(3));
    has_child[i] = rng.chance(30);
  }
  Occupancy occ(static_cast<int>(c.threads));
  std::atomic<std::uint64_t> done{0};
  Watchdog dog(current_test(), stress::watchdog_seconds(), [&] {
    return std::to_string(done.load()) + " of " + std::to_string(tasks) + " tasks finished";
  });

  auto blocking_call = [&](std::uint32_t i, Rng& rng) {
    occ.leave();
    blocking([&] {
      calls[i].fetch_add(1, std::memory_order_relaxed);
      const std::uint32_t r = rng.below(10);
      if (r < 3) {
        std::this_thread::sleep_for(std::chrono::microseconds(1 + rng.below(20)));
      } else if (r < 6) {
        std::this_thread::yield();
      } else {
        for (std::uint32_t s = rng.below(2000); s > 0; --s) std::atomic_signal_fence(std::memory_order_seq_cst);
      }
    });
    occ.enter();
  };

  const CounterSet before = sched->counters();
  sched->run([&] {
    occ.enter();
    Rng spawner_rng(c.max_threads);
    WaitGroup wg;
    for (std::uint32_t i = 0; i < tasks; ++i) {
      wg.go([&, i] {
        occ.enter();
        started[i].fetch_add(1, std::memory_order_relaxed);
        Rng rng(i);
        for (std::uint32_t k = 0; k < planned_calls[i]; ++k) {
          std::optional<JoinHandle<std::uint32_t>> child;
          if (has_child[i] && k == 0) {
            child.emplace(spawn([&, i] {
              occ.enter();
              child_ran[i].fetch_add(1, std::memory_order_relaxed);
              Rng crng(i ^ 0xABCDEF);
              stress::random_delay(crng);
              occ.leave();
              return i;
            }));
          }
          stress::random_delay(rng);
          blocking_call(i, rng);
          if (child) {
            occ.leave();
            const std::uint32_t got = child->join();
            occ.enter();
            if (got != i) ADD_FAILURE() << "child of task " << i << " returned " << got;
          }
        }
        finished[i].fetch_add(1, std::memory_order_relaxed);
        done.fetch_add(1, std::memory_order_relaxed);
        occ.leave();
      });
      if (i % 64 == 0) stress::random_delay(spawner_rng);
    }
    occ.leave();
    wg.wait();
  });
  const CounterSet k = stress::settled_counters(*sched, before, global_queue_balanced);

  std::uint32_t wrong = 0, first_wrong = UINT32_MAX;
  for (std::uint32_t i = 0; i < tasks; ++i) {
    const bool ok = started[i].load() == 1 && finished[i].load() == 1 &&
                    calls[i].load() == planned_calls[i] && child_ran[i].load() == has_child[i];
    if (!ok) {
      ++wrong;
      if (first_wrong == UINT32_MAX) first_wrong = i;
    }
  }
  std::printf("  %u tasks: handoffs %llu, threads created %llu, global pushes %llu, peak running %d\n",
              tasks, static_cast<unsigned long long>(k[Counter::handoffs]),
              static_cast<unsigned long long>(k[Counter::threads_created]),
              static_cast<unsigned long long>(k[Counter::global_pushes]), occ.peak.load());
  EXPECT_EQ(wrong, 0u) << "tasks whose start, blocking calls, child or end did not happen exactly "
                          "as planned; first "
                       << first_wrong;
  EXPECT_EQ(occ.violations.load(), 0) << "more tasks ran at once than there are Ps (peak "
                                      << occ.peak.load() << ")";
  EXPECT_EQ(k[Counter::tasks_executed], k[Counter::tasks_spawned]);
  EXPECT_EQ(k[Counter::global_pushes], k[Counter::global_pops]);
  EXPECT_LE(k[Counter::threads_created], c.max_threads);
  const auto handoff = c.extra.find("handoff");
  if (handoff != c.extra.end() && handoff->second == "eager") {
    // Every call hands its P over (or finds a spinner to take its place).
    if (c.max_threads > c.threads) {
      EXPECT_GT(k[Counter::handoffs], 0u);
    }
  } else {
    // lazy: a hand-off only of a P the monitor took back from a call that lasted (a retaken P
    // with nothing to do goes idle without one).
    EXPECT_LE(k[Counter::handoffs], k[Counter::retakes]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    StealHalf, HandoffStress,
    ::testing::Values(HandoffCase{1, 1, {}}, HandoffCase{1, 2, {}}, HandoffCase{1, 64, {}},
                      HandoffCase{2, 2, {}}, HandoffCase{2, 3, {}}, HandoffCase{2, 64, {}},
                      HandoffCase{2, 3, {{"capacity", "2"}, {"runnext", "off"}}},
                      HandoffCase{1, 4, {{"capacity", "2"}, {"global-check", "0"}}},
                      HandoffCase{1, 64, {{"handoff", "eager"}}}, HandoffCase{2, 3, {{"handoff", "eager"}}},
                      HandoffCase{2, 64, {{"steal-runnext", "off"}}}),
    [](const auto& info) {
      return case_name("", info.param.threads, info.param.extra) + "_max" +
             std::to_string(info.param.max_threads);
    });

// ============================================================================================
// RunNext: the owner's plain stores against thieves (runnext.hpp).
// ============================================================================================
//
// The owner puts a fresh task (the one displaced is "queued": run by the owner at once) or
// takes runnext and runs it; thieves peek and steal, and run what they get. Every put is one
// use of one of 64 task objects, numbered; whoever runs a use counts it in the ledger and frees
// the object for reuse. Every use must run exactly once: a task the owner and a thief both
// believed theirs counts twice, or counts a later use of its object. Checked against the
// protocol with the owner's look at thief_ removed from take() or from put(): about half of the
// Debug runs (100,000 uses) failed, with 1 to 209 uses run twice; the full count is 10^6 uses.
TEST(RunNextStress, OwnerAndThievesRunEveryTaskExactlyOnce) {
  if (!process_barrier_available()) GTEST_SKIP() << "no membarrier: runnext is never stolen here";
  struct Use : Task {
    std::atomic<std::uint64_t> use{0};
    std::atomic<bool> busy{false};
  };
  constexpr std::uint32_t kObjects = 64;
  const std::uint64_t uses = stress::scaled(1'000'000, 3000);
  std::vector<Use> objects(kObjects);
  std::vector<std::atomic<std::uint8_t>> ledger(uses);
  std::atomic<std::uint64_t> stolen{0};
  std::atomic<bool> stop{false};
  // The owner stalls between reading the slot and writing it, now and then, for up to ~10 µs:
  // the window a thief's CAS must hit to race with it is two instructions wide otherwise.
  struct Stall {
    Rng* rng;
    void operator()() noexcept {
      if (rng->chance(75)) return;
      for (std::uint32_t i = rng->below(256); i > 0; --i) {
        cpu_relax();
      }
    }
  };
  Rng stall_rng(11);
  BasicRunNext<Stall> slot(Stall{&stall_rng});
  auto run = [&](Task* t) {
    auto* u = static_cast<Use*>(t);
    ledger[u->use.load(std::memory_order_relaxed)].fetch_add(1, std::memory_order_relaxed);
    u->busy.store(false, std::memory_order_release);
  };
  Watchdog dog(current_test());
  std::vector<std::thread> thieves;
  for (int i = 0; i < 2; ++i) {
    thieves.emplace_back([&, i] {
      Rng rng(100 + i);
      while (!stop.load(std::memory_order_relaxed)) {
        Task* seen = slot.peek();
        if (seen == nullptr) {
          std::this_thread::yield();  // three threads on two cores: let the owner run
          continue;
        }
        stress::random_delay(rng);
        if (Task* t = slot.steal(seen)) {
          run(t);
          stolen.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  Rng rng(7);
  std::uint32_t next_object = 0;
  for (std::uint64_t use = 0; use < uses;) {
    if (rng.chance(50)) {
      Use* u = nullptr;
      for (std::uint32_t tries = 0; tries < kObjects && u == nullptr; ++tries) {
        Use& candidate = objects[next_object++ % kObjects];
        if (!candidate.busy.load(std::memory_order_acquire)) u = &candidate;
      }
      if (u == nullptr) continue;  // every object is in flight; take or wait for a thief
      u->busy.store(true, std::memory_order_relaxed);
      u->use.store(use++, std::memory_order_relaxed);
      if (Task* displaced = slot.put(*u)) run(displaced);
    } else if (Task* t = slot.take()) {
      run(t);
    }
    stress::random_delay(rng);
  }
  stop.store(true);
  for (auto& t : thieves) t.join();
  if (Task* t = slot.take()) run(t);
  std::uint64_t wrong = 0, first_wrong = UINT64_MAX;
  for (std::uint64_t i = 0; i < uses; ++i) {
    if (ledger[i].load() != 1) {
      ++wrong;
      if (first_wrong == UINT64_MAX) first_wrong = i;
    }
  }
  std::printf("  %llu uses, %llu taken by thieves\n", static_cast<unsigned long long>(uses),
              static_cast<unsigned long long>(stolen.load()));
  EXPECT_EQ(wrong, 0u) << "uses not run exactly once; first " << first_wrong;
  EXPECT_GT(stolen.load(), 0u) << "no thief ever took runnext: the race was not exercised";
}

// ============================================================================================
// Reproducer: a lost wake-up at --max-threads (found by HandoffStress; fixed in stopm).
// ============================================================================================
//
// Every task makes three empty blocking calls, so threads keep coming back from calls while
// another thread holds the only idle P in transit. Before the fix, with one P and two threads:
//   M0, back from a call with no P free, queues its task globally; its wakep takes the idle P
//       (nmspinning = 1) and startm looks for an idle M;
//   M1 comes back from its call, finds no idle P (M0 holds it in transit), queues its task
//       globally, sees nmspinning != 0 and wakes nobody; it is not yet on the idle M list;
//   M0's startm finds no idle M and cannot create one (max-threads), so it puts the P back;
//   M0 and M1 both park, with the P idle and tasks in the global queue: the run never ends.
// Unfixed, this failed within 20 runs nearly every time (1 P, 2 threads); the runtime's deadlock
// check turns it into a DeadlockError, the watchdog into an abort if that check is absent.
// Every blocking call here is a wake-up of the other thread, so on an overloaded machine a run
// is a chain of wake-ups that each wait milliseconds for a CPU: slow, never stuck. That chain
// once passed the deadlock check as one long sleep, a false report of a lost wake-up (see
// FiberRuntime::stuck and Deadlock.AChainOfShortSleepsIsNotADeadlock).
//
// The same race with --handoff lazy, where the hand-off is the monitor's, concurrent with the
// thread coming back from its call: the monitor retook the P of a call that lasted, found no idle
// M and could start none (max-threads), while the thread came back, found no P, queued its task
// and listed itself idle; the monitor then put the P, with work, on the idle list and both slept
// (found by RandomSpawnTrees under TSan at --max-threads = --threads = 1; fixed in startm). Here
// the calls sleep 50 µs, long enough for the monitor to retake some of them.
TEST(StealHalfLostWakeup, ThreadsBackFromBlockingCallsAtMaxThreadsNeverStrandWork) {
  Watchdog dog(current_test());
  struct Case {
    unsigned threads, max_threads;
    const char* handoff;
    int tasks;
    std::chrono::microseconds call;
    int runs;  // unscaled
  };
  // Unfixed, the lazy case at 1 thread failed 1 release run of 3 (150 runs of 200 tasks then; now 50 runs of 100 tasks, ~30 ms each).
  const auto call = std::chrono::microseconds(50);
  for (const Case& c : {Case{1, 2, "eager", 2000, {}, 150}, Case{2, 3, "eager", 2000, {}, 150},
                        Case{1, 1, "lazy", 100, call, 50}, Case{2, 2, "lazy", 100, call, 50},
                        Case{1, 2, "lazy", 100, call, 50}}) {
    auto sched = make_scheduler("steal-half", c.threads,
                                {{"max-threads", std::to_string(c.max_threads)}, {"handoff", c.handoff}});
    const int runs = static_cast<int>(stress::scaled(c.runs, c.runs / 5));
    for (int run = 0; run < runs; ++run) {
      dog.phase("steal-half x" + std::to_string(c.threads) + " max-threads " + std::to_string(c.max_threads) +
                " --handoff " + c.handoff + " run " + std::to_string(run));
      std::atomic<int> calls{0};
      sched->run([&] {
        WaitGroup wg;
        for (int i = 0; i < c.tasks; ++i) {
          wg.go([&] {
            for (int k = 0; k < 3; ++k) {
              blocking([&] {
                if (c.call.count() != 0) std::this_thread::sleep_for(c.call);
                calls.fetch_add(1, std::memory_order_relaxed);
              });
            }
          });
        }
        wg.wait();
      });
      ASSERT_EQ(calls.load(), 3 * c.tasks) << "run " << run;
    }
  }
}

// ============================================================================================
// The spinning protocol's store-load pair, with plain pushes (run_queue.hpp, steal_half.cpp).
// ============================================================================================
//
// One P keeps busy while the other is idle: the busy P's task spawns two children (the second
// takes runnext, the first goes to its local queue, where only a thief can reach it) and then
// spins until the first has run, without yielding its P. The idle P must take it: woken by the
// push if nobody spins, or as a spinner that steals it, or, if it was giving up at that very
// moment, by the second look it takes after its barrier; or, if its M was giving the P up
// without spinning while the push found every P busy, by the look again that need_spinning
// asks for. Before need_spinning, that last case was lost, under TSan with three busy loops on
// two cores: spinning on, 6 rounds in 82,400; spinning off (no second look at all), 25 runs of
// 27 had late rounds. A lost wake-up leaves the child queued behind a task that never yields:
// the spin's deadline turns that into a failure, and the first such round ends the run. Random
// pauses between rounds catch the idle P in every phase (spinning, giving up, parked).
TEST(StealHalfSpinningProtocol, AnIdleProcessorTakesWhatABusyOneQueues) {
  Watchdog dog(current_test());
  const std::uint64_t rounds = stress::scaled(4000, 300);
  constexpr auto kDeadline = std::chrono::seconds(5);  // a wake-up takes microseconds
  for (const char* spinning : {"on", "off"}) {
    dog.phase(std::string("steal-half x2 --spinning=") + spinning);
    auto sched = make_scheduler("steal-half", 2, {{"spinning", spinning}});
    std::uint64_t late_round = 0;  // 1 + the first round whose queued task waited past the deadline
    sched->run([&] {
      Rng rng(7);
      for (std::uint64_t r = 0; r < rounds && late_round == 0; ++r) {
        std::atomic<bool> ran{false};
        auto queued = spawn([&ran] { ran.store(true, std::memory_order_release); });
        auto next = spawn([] {});
        const auto start = std::chrono::steady_clock::now();
        while (!ran.load(std::memory_order_acquire)) {
          if (std::chrono::steady_clock::now() - start > kDeadline) {
            late_round = r + 1;  // joining below runs the task here
            break;
          }
        }
        queued.join();
        next.join();
        stress::random_delay(rng);
      }
    });
    EXPECT_EQ(late_round, 0u) << "--spinning=" << spinning << ": in round " << late_round
                              << " of " << rounds << " the idle processor never took the queued task";
  }
}

}  // namespace
}  // namespace schedlab
