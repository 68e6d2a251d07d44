// The policy contract (schedulers/runtime/policy.hpp, "The contract"), checked: every
// registered fiber-runtime policy's counters agree with what the runtime observed, and its idle
// workers are seen parked when the kernel has them asleep (runtime/conformance.hpp). And each
// check fails, naming the omission, for a policy built to skip one duty.
#include <gtest/gtest.h>

#include <iostream>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "api.hpp"
#include "registry.hpp"
#include "runtime/conformance.hpp"
#include "runtime/policy_runtime.hpp"

namespace schedlab {
namespace {

constexpr std::chrono::milliseconds kPatience{20000};

// Runs a few small workloads (fork-join, a wait group, sockets, channels, a mutex) on `s`, and
// tasks that yield.
void exercise(Scheduler& s) {
  for (const auto& [name, params] : std::vector<std::pair<std::string, ParamValues>>{
           {"fib-go", {{"n", "12"}}}, {"loops", {{"tasks", "50"}, {"iters", "1000"}}},
           {"netmix", {{"conns", "3"}, {"requests", "3"}, {"iters", "100"}}},
           {"pingpong", {{"pairs", "2"}, {"rounds", "200"}}},
           {"lockmix", {{"tasks", "4"}, {"ops", "200"}, {"hold", "50"}, {"between", "20"}}}}) {
    const WorkloadEntry& w = find_workload(name);
    auto work = w.make(resolve_params(w.params, params, "workload " + name));
    work->prepare();
    s.run([&] { work->run(); });
    EXPECT_EQ(work->check(), "") << name;
    work->cleanup();
  }
  s.run([] {
    WaitGroup wg;
    for (int t = 0; t < 4; ++t) {
      wg.go([] {
        for (int i = 0; i < 10; ++i) yield();
      });
    }
  });
}

TEST(PolicyConformance, EveryRegisteredPolicyKeepsTheContract) {
  int policies = 0;
  std::string checked;
  for (const SchedulerEntry& e : scheduler_registry()) {
    if (e.kind != SchedulerKind::in_process) continue;
    for (unsigned threads : {1u, 3u}) {
      auto sched = make_scheduler(e.name, threads);
      auto* runtime = dynamic_cast<FiberRuntime*>(sched.get());
      if (runtime == nullptr) break;  // not a policy of the fiber runtime
      SCOPED_TRACE(e.name + " x" + std::to_string(threads));
      if (threads == 1) {
        ++policies;
        checked += (checked.empty() ? "" : ", ") + e.name;
      }
      exercise(*sched);
      EXPECT_EQ(policy_counter_problems(runtime->counters()), "");
      EXPECT_EQ(policy_idle_problems(*runtime, kPatience), "");
    }
  }
  EXPECT_GE(policies, 4) << "fair, central, steal-half and random-push at least";
  // Which policies the registry gave this test: tests/extending checks that a new one is among them.
  std::cout << "policies checked: " << checked << "\n";
}

// A one-queue policy (central's shape) that skips one duty of the contract, or none.
enum class Skip { nothing, idle_accounting, root_push, pop_count, yield_push };

template <Skip kSkip>
class SkippingPolicy final : public Policy {
 public:
  void submit_new(Task& t, Worker* from) override { push(t, from); }
  void submit_ready(Task& t, Worker* from) override { push(t, from); }
  void submit_yield(Task& t, Worker* from) override {
    if constexpr (kSkip == Skip::yield_push) {
      std::lock_guard lock(mutex_);  // the omission: a yield's push goes uncounted
      queue_.push_back(&t);
    } else {
      push(t, from);
    }
  }
  Task* next(Worker& w) override {
    std::unique_lock lock(mutex_);
    while (queue_.empty()) {
      if (stopping_) return nullptr;
      ++sleepers_;
      if constexpr (kSkip == Skip::idle_accounting) {
        wakeup_.wait(lock);  // the omission: a sleep the runtime never hears of
      } else {
        w.sleep_on(wakeup_, lock);
      }
      --sleepers_;
    }
    Task* t = queue_.front();
    queue_.pop_front();
    if constexpr (kSkip != Skip::pop_count) w.stats.add(Counter::global_pops);
    return t;
  }
  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wakeup_.notify_all();
  }

 private:
  void push(Task& t, Worker* from) {
    if constexpr (kSkip == Skip::root_push) {
      if (from != nullptr) from->stats.add(Counter::global_pushes);  // the omission: the root's
    } else {
      count_push(from, Counter::global_pushes);
    }
    bool sleeper;
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(&t);
      sleeper = sleepers_ > 0;
    }
    if (sleeper) wake(from, [this] { wakeup_.notify_one(); });
  }

  std::mutex mutex_;
  std::condition_variable wakeup_;
  std::deque<Task*> queue_;
  int sleepers_ = 0;
  bool stopping_ = false;
};

template <Skip kSkip>
std::unique_ptr<FiberRuntime> skipping_runtime(unsigned threads) {
  RuntimeConfig c;
  c.threads = threads;
  return std::make_unique<PolicyRuntime<SkippingPolicy<kSkip>>>(std::make_unique<SkippingPolicy<kSkip>>(), c);
}

// The control: the same policy skipping nothing passes both checks.
TEST(PolicyConformance, APolicySkippingNothingPasses) {
  auto rt = skipping_runtime<Skip::nothing>(2);
  exercise(*rt);
  EXPECT_EQ(policy_counter_problems(rt->counters()), "");
  EXPECT_EQ(policy_idle_problems(*rt, kPatience), "");
}

TEST(PolicyConformance, APolicySkippingIdleAccountingFailsNamingIt) {
  auto rt = skipping_runtime<Skip::idle_accounting>(2);
  exercise(*rt);
  const std::string idle = policy_idle_problems(*rt, kPatience);
  EXPECT_NE(idle.find("sleeps without Worker::sleep_on or park"), std::string::npos) << idle;
  EXPECT_EQ(rt->counters()[Counter::parks], 0u) << "the sleeps went uncounted";
}

TEST(PolicyConformance, APolicySkippingTheRootsPushFailsNamingIt) {
  auto rt = skipping_runtime<Skip::root_push>(2);
  exercise(*rt);
  const std::string problems = policy_counter_problems(rt->counters());
  EXPECT_NE(problems.find("the root's (from == nullptr) too"), std::string::npos) << problems;
}

TEST(PolicyConformance, APolicySkippingAYieldsPushFailsNamingIt) {
  auto rt = skipping_runtime<Skip::yield_push>(1);  // one worker: nobody sleeps while a yield is queued
  exercise(*rt);
  const std::string problems = policy_counter_problems(rt->counters());
  EXPECT_NE(problems.find("pushes:"), std::string::npos) << problems;
}

TEST(PolicyConformance, APolicySkippingItsPopsFailsNamingIt) {
  auto rt = skipping_runtime<Skip::pop_count>(2);
  exercise(*rt);
  const std::string problems = policy_counter_problems(rt->counters());
  EXPECT_NE(problems.find("pops:"), std::string::npos) << problems;
}

}  // namespace
}  // namespace schedlab
