// paired.hpp: the Hodges-Lehmann estimate of paired per-block differences with its exact 95%
// interval, for the summary table `schedlab run` prints ("A ran 1.31x [1.22, 1.40] faster than
// B"). The report's claims use the same estimate and interval, computed by
// scripts/schedlab_results/paired.py; tests/scripts/test_paired_agreement.py runs both on the
// same data sets (through tests/hodges_lehmann_tool.cpp) and requires the same numbers.
//
// For n differences x_i the estimate is the median of the n(n+1)/2 Walsh averages
// (x_i + x_j) / 2, i <= j, and the interval runs from the c-th smallest to the c-th largest of
// them, c the largest count with P(W+ <= c - 1) <= 2.5% under the signed-rank null (exact up to
// 60 blocks, normal approximation beyond). Five or fewer blocks cannot reach 95%: the interval
// is then unbounded.
#pragma once

#include <vector>

namespace schedlab {

struct Estimate {
  double centre;
  double low;   // -inf when unbounded
  double high;  // +inf when unbounded
};

// Of `differences` (NaNs ignored); centre NaN when there are none.
Estimate hodges_lehmann(std::vector<double> differences);

}  // namespace schedlab
