// A Measurement crosses a process boundary as JSON (measure.hpp: measurement_to_json and back):
// from a simulated repetition's child and from the A/B servers to the runner. A field that the
// JSON leaves out arrives empty, and its CSV column is silently blank for those runs only. So:
// every field a child measures survives the round trip, and the struct's size is pinned, as
// Go's runtime/sizeof_test.go pins its structs, so that whoever adds a field comes here.
#include <gtest/gtest.h>

#include "measure.hpp"

namespace schedlab {
namespace {

// Every field a child sets, set to a value no default has.
Measurement every_field_set() {
  Measurement m;
  m.wall_ns = 12345.5;
  m.tasks = 77;
  for (std::size_t k = 0; k < kCounterCount; ++k) m.counters.set(static_cast<Counter>(k), 1000 + k);
  m.cpu_ns = 999.25;
  m.nvcsw = 3;
  m.nivcsw = 4;
  m.events = {{"context_switches", 5}, {"l2_misses", 6}};
  m.model_l2_misses = 8;
  m.sched_delay = LatencyDistribution({{10, 1, 2}, {200, 8, 3}}, 205);
  m.sched_delay_source = kDelaysFromGo;
  m.request = RequestLatency{LatencyDistribution({{1000, 64, 9}}, std::nullopt), 1234.5};
  return m;
}

void expect_same(const LatencyDistribution& a, const LatencyDistribution& b) {
  ASSERT_EQ(a.buckets().size(), b.buckets().size());
  for (std::size_t i = 0; i < a.buckets().size(); ++i) {
    EXPECT_EQ(a.buckets()[i].low, b.buckets()[i].low);
    EXPECT_EQ(a.buckets()[i].width, b.buckets()[i].width);
    EXPECT_EQ(a.buckets()[i].count, b.buckets()[i].count);
  }
  EXPECT_EQ(a.max_exact(), b.max_exact());
  EXPECT_EQ(a.max(), b.max());
}

TEST(MeasurementJson, EveryFieldAChildMeasuresRoundTrips) {
  const Measurement in = every_field_set();
  const Measurement out = measurement_from_json(measurement_to_json(in));
  EXPECT_EQ(out.wall_ns, in.wall_ns);
  EXPECT_EQ(out.tasks, in.tasks);
  EXPECT_EQ(out.counters.measured, in.counters.measured);
  EXPECT_EQ(out.counters.value, in.counters.value);
  EXPECT_EQ(out.cpu_ns, in.cpu_ns);
  EXPECT_EQ(out.nvcsw, in.nvcsw);
  EXPECT_EQ(out.nivcsw, in.nivcsw);
  EXPECT_EQ(out.events, in.events);
  EXPECT_EQ(out.model_l2_misses, in.model_l2_misses);
  ASSERT_TRUE(out.sched_delay.has_value());
  expect_same(*out.sched_delay, *in.sched_delay);
  EXPECT_EQ(out.sched_delay_source, in.sched_delay_source);
  ASSERT_TRUE(out.request.has_value());
  expect_same(out.request->latency, in.request->latency);
  EXPECT_EQ(out.request->rate_per_s, in.request->rate_per_s);
}

TEST(MeasurementJson, WhatWasNotMeasuredStaysUnmeasured) {
  Measurement in;
  in.wall_ns = 1;
  const Measurement out = measurement_from_json(measurement_to_json(in));
  EXPECT_FALSE(out.tasks || out.cpu_ns || out.nvcsw || out.nivcsw || out.model_l2_misses || out.sched_delay ||
               out.request);
  EXPECT_TRUE(out.counters.measured.none());  // a counter not read stays missing, not zero
  EXPECT_TRUE(out.events.empty());
}

// Not a promise about the layout: a tripwire. When a field is added, this fails; then add the
// field to measurement_to_json and measurement_from_json (measure.cpp) and to every_field_set
// above, unless the runner sets it itself (machine, facts, elision_ns, one_thread_ns, sim: the
// runner's, after the child's answer), and update the size here.
constexpr std::size_t kMeasurementSizeOnX86_64 = 816;
TEST(MeasurementJson, ANewFieldComesHereFirst) {
#if defined(__x86_64__) && defined(__GLIBCXX__)
  EXPECT_EQ(sizeof(Measurement), kMeasurementSizeOnX86_64)
      << "Measurement changed size: see this test's comment before updating the size";
#else
  GTEST_SKIP() << "the size is pinned for x86-64 with libstdc++ only";
#endif
}

}  // namespace
}  // namespace schedlab
