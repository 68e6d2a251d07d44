// Microbenchmarks of the runtime's building blocks: a fiber round trip through switch_fiber
// against Boost's plain resume, and the local run queue's push/pop.
#include <benchmark/benchmark.h>

#include <boost/context/fiber.hpp>

#include "runtime/fiber.hpp"
#include "runtime/stack.hpp"
#include "steal_half/run_queue.hpp"

namespace schedlab {
namespace {

void BM_BoostResumeRoundTrip(benchmark::State& state) {
  namespace ctx = boost::context;
  bool stop = false;
  ctx::fiber f{[&stop](ctx::fiber&& back) {
    while (!stop) back = std::move(back).resume();
    return std::move(back);
  }};
  for (auto _ : state) f = std::move(f).resume();
  stop = true;
  f = std::move(f).resume();
}
BENCHMARK(BM_BoostResumeRoundTrip);

struct PingPong {
  Fiber* main = nullptr;
  Fiber* other = nullptr;
  long count = 0;
};
PingPong* g_pp = nullptr;

void ping_entry(Fiber& self) {
  while (!self.exit_requested()) {
    ++g_pp->count;
    switch_fiber(self, *g_pp->main, [] {});
  }
}

void BM_SwitchFiberRoundTrip(benchmark::State& state) {
  StackAllocator stacks(StackConfig{});
  PingPong pp;
  g_pp = &pp;
  pp.main = Fiber::for_current_thread();
  pp.other = Fiber::create(stacks, &ping_entry);
  for (auto _ : state) switch_fiber(*pp.main, *pp.other, [] {});
  pp.other->request_exit(*pp.main);
  switch_fiber(*pp.main, *pp.other, [] {});
  delete pp.other;
  delete pp.main;
}
BENCHMARK(BM_SwitchFiberRoundTrip);

void BM_RunQueuePushPopLifo(benchmark::State& state) {
  LocalRunQueue q(256);
  Task t;
  for (auto _ : state) {
    q.push(t);
    benchmark::DoNotOptimize(q.pop(LocalOrder::lifo));
  }
}
BENCHMARK(BM_RunQueuePushPopLifo);

}  // namespace
}  // namespace schedlab

BENCHMARK_MAIN();
