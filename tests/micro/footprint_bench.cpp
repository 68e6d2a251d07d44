// What recording a task's footprint costs (workloads/footprint.hpp): touch() with no log
// active (every run without `--counters model`), with one active on one thread, and with one
// active on several threads at once (the shared order counter's cache line moves between them).
// Multiply by the tasks per run to bound what `--counters model` adds to a run's time.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "footprint.hpp"

namespace schedlab {
namespace {

std::uint64_t g_region[64];

void BM_TouchNoLog(benchmark::State& state) {
  for (auto _ : state) touch(g_region, sizeof g_region, 4, true);
}
BENCHMARK(BM_TouchNoLog);

FootprintLog g_log;

// Started before the loop, whose first iteration waits for every thread (Google Benchmark).
void BM_TouchRecording(benchmark::State& state) {
  if (state.thread_index() == 0) g_log.start();
  for (auto _ : state) touch(g_region, sizeof g_region, 4, true);
  if (state.thread_index() == 0) g_log.stop();
}
// A fixed count keeps the log's memory bounded (48 bytes a record): 96 MB at 2 threads.
BENCHMARK(BM_TouchRecording)->Threads(1)->Threads(2)->UseRealTime()->Iterations(1000000);

}  // namespace
}  // namespace schedlab

BENCHMARK_MAIN();
