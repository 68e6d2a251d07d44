// harness/summary.hpp on fixed times: the noisy and short marks, and the comparisons (which
// cases are compared, the faster named first, the paired estimate and its interval).
#include "summary.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace schedlab {
namespace {

// A case of fib at its defaults, run in block 0 with repetitions 0, 1, ... taking `wall_ns`.
CaseResult fib_case(const std::string& scheduler, ParamValues given, unsigned threads, std::vector<double> wall_ns) {
  const SchedulerEntry& s = find_scheduler(scheduler);
  const WorkloadEntry& w = find_workload("fib");
  CaseResult r{Case{&s, resolve_params(s.params, given, scheduler), &w, resolve_params(w.params, {}, "fib"), threads},
               0, std::move(wall_ns), {}, NAN};
  for (unsigned rep = 0; rep < r.wall_ns.size(); ++rep) r.reps.push_back(rep);
  return r;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Summary, NamesTheFasterFirstWithThePairedIntervalOverSixRepetitions) {
  const std::vector<double> ms{10e6, 11e6, 12e6, 10e6, 11e6, 12e6};
  std::vector<double> twice;
  for (double t : ms) twice.push_back(2 * t);
  const std::string text = summary_table({fib_case("fair", {}, 2, twice), fib_case("steal-half", {}, 2, ms)});
  // Every pair of repetitions has the ratio 2: the estimate and both ends are 2.
  EXPECT_NE(text.find("\n  steal-half ran 2.00× [2.00, 2.00] faster than fair\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nfib(n=30 cutoff=0), 2 threads:\n"), std::string::npos) << text;
  EXPECT_EQ(count(text, "faster than"), 1u) << text;
  EXPECT_EQ(text.find("no intervals"), std::string::npos) << text;
}

TEST(Summary, ComparesAVariantWithStealHalfAndWithItsOwnDefaults) {
  const std::vector<double> t{10e6, 10e6, 10e6};
  const std::string text = summary_table({fib_case("central", {}, 1, {30e6, 30e6, 30e6}),
                                          fib_case("central", {{"order", "lifo"}}, 1, {20e6, 20e6, 20e6}),
                                          fib_case("steal-half", {}, 1, t)});
  EXPECT_NE(text.find("steal-half ran 3.00× faster than central\n"), std::string::npos) << text;
  EXPECT_NE(text.find("steal-half ran 2.00× faster than central order=lifo\n"), std::string::npos) << text;
  EXPECT_NE(text.find("central order=lifo ran 1.50× faster than central\n"), std::string::npos) << text;
  EXPECT_EQ(count(text, "faster than"), 3u) << text;
  EXPECT_NE(text.find("no intervals: 3 repetitions"), std::string::npos) << text;
}

TEST(Summary, ComparesOnlyWithinAThreadCount) {
  const std::string text = summary_table({fib_case("fair", {}, 1, {2e6, 2e6}), fib_case("steal-half", {}, 2, {1e6, 1e6})});
  EXPECT_EQ(count(text, "faster than"), 0u) << text;
}

TEST(Summary, MarksSpreadAboveTenPercentNoisyAndMediansUnderAMillisecondShort) {
  const std::string text = summary_table({fib_case("fair", {}, 1, {10e6, 10e6, 14e6}),       // CV 0.18
                                          fib_case("central", {}, 1, {10e6, 10.1e6, 10.2e6}),  // CV 0.01
                                          fib_case("steal-half", {}, 1, {0.5e6, 0.5e6, 0.5e6})});
  std::vector<std::string> lines;
  for (std::size_t from = 0, nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
    lines.push_back(text.substr(from, nl - from));
  }
  ASSERT_GE(lines.size(), 4u) << text;
  EXPECT_TRUE(lines[1].ends_with("  noisy")) << lines[1];
  EXPECT_EQ(lines[2].find("noisy"), std::string::npos) << lines[2];
  EXPECT_TRUE(lines[3].ends_with("  short")) << lines[3];
}

}  // namespace
}  // namespace schedlab
