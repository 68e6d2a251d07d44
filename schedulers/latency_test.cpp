// The latency histogram against exact percentiles of the same samples (latency.hpp states the
// bound: every percentile and the max within 1/128 of the exact figure, exact below 128 ns).
#include "latency.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace schedlab {
namespace {

// The nearest-rank percentile of sorted samples: the smallest with at least q% at or below it.
std::uint64_t exact_percentile(const std::vector<std::uint64_t>& sorted, double q) {
  const double rank = std::max(1.0, std::ceil(q / 100.0 * static_cast<double>(sorted.size())));
  return sorted[static_cast<std::size_t>(rank) - 1];
}

void expect_within_bound(const std::vector<std::uint64_t>& samples, const LatencyDistribution& d, const char* what) {
  std::vector<std::uint64_t> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(d.count(), sorted.size()) << what;
  for (double q : {1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    const double exact = static_cast<double>(exact_percentile(sorted, q));
    const double got = static_cast<double>(*d.percentile(q));
    EXPECT_LE(std::abs(got - exact), exact * LatencyHistogram::kRelativeError)
        << what << ": p" << q << " = " << got << ", exact " << exact;
    if (exact < static_cast<double>(LatencyHistogram::kLinear)) {
      EXPECT_EQ(got, exact) << what << ": p" << q;
    }
  }
  EXPECT_EQ(*d.max(), sorted.back()) << what << ": the max is exact";
  EXPECT_TRUE(d.max_exact());
}

LatencyHistogram histogram_of(const std::vector<std::uint64_t>& samples) {
  LatencyHistogram h;
  for (std::uint64_t v : samples) h.record(v);
  return h;
}

TEST(LatencyHistogram, BucketsCoverEveryValueOnceInOrder) {
  for (std::size_t i = 0; i + 1 < LatencyHistogram::kBuckets; ++i) {
    const LatencyBucket b = LatencyHistogram::bucket(i);
    ASSERT_EQ(LatencyHistogram::bucket(i + 1).low, b.low + b.width) << "bucket " << i;
    ASSERT_EQ(LatencyHistogram::index(b.low), i);
    ASSERT_EQ(LatencyHistogram::index(b.low + b.width - 1), i);
    // The stated bound, bucket by bucket: the representative within 1/128 of each value in it.
    const double rep = static_cast<double>(b.representative());
    for (std::uint64_t v : {b.low, b.low + b.width - 1}) {
      ASSERT_LE(std::abs(rep - static_cast<double>(v)), static_cast<double>(v) * LatencyHistogram::kRelativeError)
          << "bucket " << i << " value " << v;
    }
  }
  EXPECT_EQ(LatencyHistogram::index(UINT64_MAX), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogram, PercentilesWithinTheStatedErrorOfExactOnes) {
  std::mt19937_64 random(20261130);
  const std::size_t n = 200000;
  std::vector<std::uint64_t> uniform, log_uniform, heavy_tail, small;
  std::uniform_int_distribution<std::uint64_t> flat(0, 2'000'000);
  std::uniform_real_distribution<double> exponent(0.0, 33.0);  // 1 ns .. ~8.6 s
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<std::uint64_t> tiny(0, 300);
  for (std::size_t i = 0; i < n; ++i) {
    uniform.push_back(flat(random));
    log_uniform.push_back(static_cast<std::uint64_t>(std::exp2(exponent(random))));
    heavy_tail.push_back(static_cast<std::uint64_t>(1000.0 / std::pow(1.0 - unit(random), 1.0 / 1.2)));  // Pareto 1.2
    small.push_back(tiny(random));
  }
  expect_within_bound(uniform, histogram_of(uniform).distribution(), "uniform");
  expect_within_bound(log_uniform, histogram_of(log_uniform).distribution(), "log-uniform");
  expect_within_bound(heavy_tail, histogram_of(heavy_tail).distribution(), "Pareto");
  expect_within_bound(small, histogram_of(small).distribution(), "under 300 ns");
  expect_within_bound({42}, histogram_of({42}).distribution(), "one sample");
  expect_within_bound({123456789}, histogram_of({123456789}).distribution(), "one large sample");
}

TEST(LatencyHistogram, MergedPerWorkerHistogramsAreTheHistogramOfAllTheirSamples) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> exponent(3.0, 25.0);
  std::vector<std::uint64_t> all;
  LatencyHistogram merged;
  for (int worker = 0; worker < 4; ++worker) {
    LatencyHistogram mine;
    for (int i = 0; i < 10000 * (worker + 1); ++i) {
      const auto v = static_cast<std::uint64_t>(std::exp2(exponent(random)));
      mine.record(v);
      all.push_back(v);
    }
    merged.merge(mine);
  }
  const LatencyDistribution whole = histogram_of(all).distribution();
  const LatencyDistribution parts = merged.distribution();
  ASSERT_EQ(parts.buckets().size(), whole.buckets().size());
  for (std::size_t i = 0; i < whole.buckets().size(); ++i) {
    EXPECT_EQ(parts.buckets()[i].low, whole.buckets()[i].low);
    EXPECT_EQ(parts.buckets()[i].count, whole.buckets()[i].count);
  }
  expect_within_bound(all, parts, "merged");
  merged.clear();
  EXPECT_EQ(merged.count(), 0u);
  EXPECT_TRUE(merged.distribution().empty());
}

TEST(LatencyDistribution, EmptyHasNoPercentiles) {
  const LatencyDistribution d = LatencyHistogram{}.distribution();
  EXPECT_FALSE(d.percentile(50).has_value());
  EXPECT_FALSE(d.max().has_value());
}

TEST(LatencyDistribution, ForeignBucketsWithoutAnExactMax) {
  // Go's layout: 16 sub-buckets per power of two; its max is the top bucket's representative.
  const LatencyDistribution d({{1024, 64, 3}, {2048, 128, 1}, {4096, 256, 0}}, std::nullopt);
  EXPECT_EQ(d.count(), 4u);
  EXPECT_EQ(*d.percentile(50), 1024u + 32u);
  EXPECT_EQ(*d.percentile(75), 1024u + 32u);
  EXPECT_EQ(*d.percentile(76), 2048u + 64u);
  EXPECT_EQ(*d.max(), 2048u + 64u);
  EXPECT_FALSE(d.max_exact());
}

}  // namespace
}  // namespace schedlab
