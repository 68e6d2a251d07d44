// latency.hpp: distributions of durations with a bounded relative error, HdrHistogram-style.
//
// Two latencies are recorded with it: the scheduling delay every fiber policy measures (the
// time from a task becoming runnable to its first instruction on a worker, runtime/runtime.hpp:
// mark_runnable) and the request latency of netmix's open-loop load generator
// (workloads/netmix/load_generator.hpp). Debian packages no C or C++ HdrHistogram, so this is a
// small one of our own, with HdrHistogram's bucket layout (Gil Tene's, which Go's runtime
// timeHistogram also uses with 16 sub-buckets: runtime/histogram.go).
//
// The buckets (log-linear, in nanoseconds). Every value below kLinear = 2^(kSubBits + 1) = 128
// has a bucket of its own. Above, each power of two [2^e, 2^(e+1)) is cut into 2^kSubBits = 64
// buckets of equal width w = 2^(e - kSubBits). A bucket stands for its values by its
// representative, low + w/2 (low itself where w = 1), which lies within w/2 = 2^(e-7) <= v/128
// of every value v in it. So:
//
//   every percentile and the max are within kRelativeError = 1/128 (0.78%) of the exact figure
//   of the same samples; below 128 ns they are exact.
//
// A percentile is the nearest-rank one (the smallest value with at least q% of the samples at
// or below it): the sample of that rank lies in the bucket the cumulative counts find, so the
// bucket's representative is within the bound of it. The max is kept exactly besides.
// latency_test.cpp checks both against exact percentiles of the same samples.
//
// The range ends at 2^(kTopExponent + 1) ns (2^44 ns, 4.9 hours); a longer value counts in the
// last bucket (its percentile would be too small; the exact max still says it).
//
// A histogram is written by one thread (a worker's own, a generator's) and read once its
// writer is known to be done; histograms merge by adding their counts, which is how a run's
// per-worker histograms become the run's (FiberRuntime::take_sched_delays).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace schedlab {

// One bucket of a distribution: values in [low, low + width), `count` of them.
struct LatencyBucket {
  std::uint64_t low = 0;
  std::uint64_t width = 1;
  std::uint64_t count = 0;

  // The value that stands for the bucket's values (low + width / 2; low for a bucket of width 1).
  std::uint64_t representative() const noexcept { return width <= 1 ? low : low + width / 2; }
};

// The percentiles every latency is summarised by (the CSV's columns; row.cpp). p100 is the max.
inline constexpr std::array<double, 4> kLatencyPercentiles = {50.0, 90.0, 99.0, 99.9};

// A distribution as buckets, the non-empty ones in ascending order: what the CSV's percentiles
// are computed from and what the latency file keeps (harness/latency_file.hpp). It is built
// from a LatencyHistogram, or from another histogram's buckets (Go's /sched/latencies:seconds,
// 16 sub-buckets per power of two: its error bound is its own, ~1/32).
class LatencyDistribution {
 public:
  LatencyDistribution() = default;
  // `buckets` in ascending order of low, non-overlapping; `max`: the exact largest value when
  // the recorder kept it.
  LatencyDistribution(std::vector<LatencyBucket> buckets, std::optional<std::uint64_t> max);

  const std::vector<LatencyBucket>& buckets() const noexcept { return buckets_; }
  std::uint64_t count() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }
  // The nearest-rank q-th percentile (0 < q <= 100): the representative of the bucket holding
  // the sample of rank ceil(q/100 x count), never above the exact max when it is known.
  // nullopt when empty.
  std::optional<std::uint64_t> percentile(double q) const noexcept;
  // The exact max where the recorder kept it, else the top bucket's representative.
  std::optional<std::uint64_t> max() const noexcept;
  // Whether max() is exact.
  bool max_exact() const noexcept { return max_.has_value(); }

 private:
  std::vector<LatencyBucket> buckets_;
  std::uint64_t count_ = 0;
  std::optional<std::uint64_t> max_;
};

class LatencyHistogram {
 public:
  static constexpr unsigned kSubBits = 6;
  static constexpr std::uint64_t kLinear = std::uint64_t{1} << (kSubBits + 1);  // 128
  static constexpr unsigned kFirstExponent = kSubBits + 1;                      // 7
  static constexpr unsigned kTopExponent = 43;
  static constexpr std::size_t kBuckets =
      kLinear + (kTopExponent - kFirstExponent + 1) * (std::size_t{1} << kSubBits);  // 2496
  // The bound on every percentile's and the max's relative error (see the top of this file).
  static constexpr double kRelativeError = 1.0 / static_cast<double>(std::uint64_t{1} << (kSubBits + 1));

  // Only by the histogram's one writer.
  void record(std::uint64_t ns) noexcept {
    ++counts_[index(ns)];
    ++count_;
    max_ = std::max(max_, ns);
  }
  void merge(const LatencyHistogram& other) noexcept;
  void clear() noexcept;

  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t max() const noexcept { return max_; }
  LatencyDistribution distribution() const;

  // The bucket of a value, and a bucket's values (exposed for the tests).
  static std::size_t index(std::uint64_t ns) noexcept {
    if (ns < kLinear) return static_cast<std::size_t>(ns);
    const unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(ns));
    if (e > kTopExponent) return kBuckets - 1;
    return static_cast<std::size_t>(kLinear + (std::uint64_t{e} - kFirstExponent) * (std::uint64_t{1} << kSubBits) +
                                    ((ns >> (e - kSubBits)) & ((std::uint64_t{1} << kSubBits) - 1)));
  }
  static LatencyBucket bucket(std::size_t i) noexcept;

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace schedlab
