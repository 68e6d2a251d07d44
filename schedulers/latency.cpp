#include "latency.hpp"

#include <cmath>

#include "assert.hpp"

namespace schedlab {

LatencyDistribution::LatencyDistribution(std::vector<LatencyBucket> buckets, std::optional<std::uint64_t> max)
    : buckets_(std::move(buckets)), max_(max) {
  std::erase_if(buckets_, [](const LatencyBucket& b) { return b.count == 0; });
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    SCHEDLAB_ASSERT(buckets_[i].width >= 1, "a bucket holds at least one value");
    SCHEDLAB_ASSERT(i == 0 || buckets_[i - 1].low + buckets_[i - 1].width <= buckets_[i].low,
                    "a distribution's buckets ascend without overlapping");
    count_ += buckets_[i].count;
  }
  if (count_ == 0) max_.reset();
}

std::optional<std::uint64_t> LatencyDistribution::percentile(double q) const noexcept {
  if (count_ == 0) return std::nullopt;
  // Nearest rank: the smallest rank r with r >= q/100 x count, at least 1.
  const double wanted = std::ceil(q / 100.0 * static_cast<double>(count_));
  const std::uint64_t rank = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::max(wanted, 1.0)), 1, count_);
  std::uint64_t seen = 0;
  for (const LatencyBucket& b : buckets_) {
    seen += b.count;
    if (seen >= rank) {
      const std::uint64_t v = b.representative();
      return max_ ? std::min(v, *max_) : v;
    }
  }
  return max();  // unreachable: the counts sum to count_
}

std::optional<std::uint64_t> LatencyDistribution::max() const noexcept {
  if (count_ == 0) return std::nullopt;
  if (max_) return max_;
  return buckets_.back().representative();
}

LatencyBucket LatencyHistogram::bucket(std::size_t i) noexcept {
  if (i < kLinear) return {i, 1, 0};
  const std::size_t k = i - kLinear;
  const unsigned e = kFirstExponent + static_cast<unsigned>(k >> kSubBits);
  const std::uint64_t width = std::uint64_t{1} << (e - kSubBits);
  const std::uint64_t sub = k & ((std::size_t{1} << kSubBits) - 1);
  return {(std::uint64_t{1} << e) + sub * width, width, 0};
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  max_ = std::max(max_, other.max_);
}

void LatencyHistogram::clear() noexcept {
  counts_.fill(0);
  count_ = 0;
  max_ = 0;
}

LatencyDistribution LatencyHistogram::distribution() const {
  std::vector<LatencyBucket> out;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    if (counts_[i] == 0) continue;
    LatencyBucket b = bucket(i);
    b.count = counts_[i];
    out.push_back(b);
  }
  return LatencyDistribution(std::move(out), count_ != 0 ? std::optional<std::uint64_t>(max_) : std::nullopt);
}

}  // namespace schedlab
