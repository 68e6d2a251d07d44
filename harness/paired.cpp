#include "paired.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace schedlab {
namespace {

constexpr double kTail = 0.025;     // two-sided 95%
constexpr std::size_t kExactUpTo = 60;  // as paired.py: exact distribution up to 60 blocks

// The count c of Walsh averages cut from each end (see the header).
std::size_t critical_rank(std::size_t n) {
  if (n > kExactUpTo) {
    const double mean = static_cast<double>(n * (n + 1)) / 4.0;
    const double sd = std::sqrt(static_cast<double>(n * (n + 1) * (2 * n + 1)) / 24.0);
    const double c = std::floor(mean - 1.959963984540054 * sd);
    return c > 0 ? static_cast<std::size_t>(c) : 0;
  }
  // counts[w] = subsets of {1..n} whose sum is w: the null distribution of W+ times 2^n.
  const std::size_t top = n * (n + 1) / 2;
  std::vector<double> counts(top + 1, 0.0);
  counts[0] = 1.0;
  for (std::size_t rank = 1; rank <= n; ++rank) {
    for (std::size_t w = top; w >= rank; --w) counts[w] += counts[w - rank];
  }
  const double total = std::ldexp(1.0, static_cast<int>(n));
  double cumulative = 0;
  std::size_t c = 0;
  while (c <= top && (cumulative + counts[c]) / total <= kTail) cumulative += counts[c++];
  return c;
}

}  // namespace

Estimate hodges_lehmann(std::vector<double> x) {
  x.erase(std::remove_if(x.begin(), x.end(), [](double v) { return std::isnan(v); }), x.end());
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (x.empty()) return {std::numeric_limits<double>::quiet_NaN(), -inf, inf};
  std::vector<double> walsh;
  walsh.reserve(x.size() * (x.size() + 1) / 2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    for (std::size_t j = i; j < x.size(); ++j) walsh.push_back((x[i] + x[j]) / 2);
  }
  std::sort(walsh.begin(), walsh.end());
  const std::size_t m = walsh.size();
  const double centre = m % 2 == 1 ? walsh[m / 2] : (walsh[m / 2 - 1] + walsh[m / 2]) / 2;
  const std::size_t c = critical_rank(x.size());
  if (c == 0) return {centre, -inf, inf};
  return {centre, walsh[c - 1], walsh[m - c]};
}

}  // namespace schedlab
