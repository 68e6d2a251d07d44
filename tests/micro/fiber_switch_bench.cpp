// Microbenchmarks of the runtime's building blocks: a fiber round trip through switch_fiber
// against Boost's plain resume, the same made a few frames deep on each side, an uncontended
// compare-and-swap, and the local run queue's push/pop. They are the floor under a task's time
// that instruction counts do not show (docs/platform.md, "The runtime core's cost"): a task of
// fib-go pays one switch, returns through frames the other fiber's calls left on the return
// stack buffer, and one or two locked instructions.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>

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

// A switch made k frames deep, resumed, and returned from: after a switch the return stack
// buffer holds the other fiber's calls, so each of the k returns is predicted wrong. The two
// sides are distinct functions (Side), as a suspended task's frames and a schedule loop's are.
struct DeepPingPong {
  Fiber* main = nullptr;
  Fiber* other = nullptr;
  int depth = 0;
};
DeepPingPong* g_deep = nullptr;

template <int Side>
[[gnu::noinline]] void switch_at_depth(int k, Fiber& self, Fiber& to) {
  if (k > 0) {
    switch_at_depth<Side>(k - 1, self, to);
    asm volatile("" ::: "memory");  // not a tail call: this frame returns after the switch
    return;
  }
  switch_fiber(self, to, [] {});
}

template <int Side>
[[gnu::noinline]] void call_chain(int k) {
  if (k > 0) {
    call_chain<Side>(k - 1);
    asm volatile("" ::: "memory");
  }
}

void deep_entry(Fiber& self) {
  while (!self.exit_requested()) switch_at_depth<1>(g_deep->depth, self, *g_deep->main);
}

void BM_SwitchFiberRoundTripThroughFrames(benchmark::State& state) {
  StackAllocator stacks(StackConfig{});
  DeepPingPong pp;
  pp.depth = static_cast<int>(state.range(0));
  g_deep = &pp;
  pp.main = Fiber::for_current_thread();
  pp.other = Fiber::create(stacks, &deep_entry);
  for (auto _ : state) switch_at_depth<0>(pp.depth, *pp.main, *pp.other);
  pp.other->request_exit(*pp.main);
  switch_fiber(*pp.main, *pp.other, [] {});
  delete pp.other;
  delete pp.main;
}
BENCHMARK(BM_SwitchFiberRoundTripThroughFrames)->Arg(0)->Arg(1)->Arg(3);

// The same frames without a switch: what the calls and returns cost when predicted.
void BM_CallChainsBothSides(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  for (auto _ : state) {
    call_chain<0>(k);
    call_chain<1>(k);
  }
}
BENCHMARK(BM_CallChainsBothSides)->Arg(0)->Arg(1)->Arg(3);

// A locked compare-and-swap on a line no other thread touches, against a plain store: the
// completion protocol and the run queue's pop pay the first (task.hpp, run_queue.hpp).
void BM_UncontendedCas(benchmark::State& state) {
  alignas(64) std::atomic<std::uint64_t> word{0};
  std::uint64_t v = 0;
  for (auto _ : state) {
    word.compare_exchange_strong(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire);
    ++v;
  }
  benchmark::DoNotOptimize(v);
}
BENCHMARK(BM_UncontendedCas);

void BM_ReleaseStore(benchmark::State& state) {
  alignas(64) std::atomic<std::uint64_t> word{0};
  std::uint64_t v = 0;
  for (auto _ : state) {
    word.store(++v, std::memory_order_release);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ReleaseStore);

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
