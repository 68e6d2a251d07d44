// harness/paired.hpp against fixed data, with the values scripts/schedlab_results/paired.py
// gives for the same data (the report's claims and the run summary must agree). That they agree
// on many more data sets is tests/scripts/test_paired_agreement.py's to check.
#include "paired.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace schedlab {
namespace {

TEST(HodgesLehmann, NineBlocksCutSixWalshAveragesFromEachEnd) {
  const Estimate e = hodges_lehmann({1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_DOUBLE_EQ(e.centre, 5.0);
  EXPECT_DOUBLE_EQ(e.low, 2.5);
  EXPECT_DOUBLE_EQ(e.high, 7.5);
}

TEST(HodgesLehmann, AgreesWithThePythonOfTheReport) {
  // paired.hodges_lehmann([0.12, -0.03, 0.07, 0.2, 0.05, 0.11, 0.09, -0.01, 0.15, 0.08, 0.13,
  // 0.04, 0.1, 0.06, 0.02]) == (0.08, 0.045, 0.11)
  const Estimate e = hodges_lehmann({0.12, -0.03, 0.07, 0.2, 0.05, 0.11, 0.09, -0.01, 0.15, 0.08,
                                     0.13, 0.04, 0.1, 0.06, 0.02});
  EXPECT_NEAR(e.centre, 0.08, 1e-12);
  EXPECT_NEAR(e.low, 0.045, 1e-12);
  EXPECT_NEAR(e.high, 0.11, 1e-12);
}

TEST(HodgesLehmann, FiveBlocksAreUnboundedAndNaNsAreIgnored) {
  const Estimate e = hodges_lehmann({1, 2, NAN, 3, 4, 5});
  EXPECT_DOUBLE_EQ(e.centre, 3.0);
  EXPECT_TRUE(std::isinf(e.low) && e.low < 0);
  EXPECT_TRUE(std::isinf(e.high) && e.high > 0);
  EXPECT_TRUE(std::isnan(hodges_lehmann({}).centre));
}

}  // namespace
}  // namespace schedlab
