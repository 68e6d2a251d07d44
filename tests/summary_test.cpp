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

bool registered(const std::string& name) {
  for (const SchedulerEntry& s : scheduler_registry()) {
    if (s.name == name) return true;
  }
  return false;
}

// The line of the table whose scheduler column starts with `variant` at `threads`.
std::string row_of(const std::string& text, const std::string& variant, unsigned threads) {
  for (std::size_t from = 0, nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
    const std::string line = text.substr(from, nl - from);
    const auto at = line.find("  " + variant + "  ");
    if (at != std::string::npos && line.find("  " + std::to_string(threads) + "  ", at + variant.size()) != std::string::npos) {
      return line;
    }
  }
  return "";
}

// The summary of the same cases run pinned (as the presets run them) and unpinned: every column
// finds its reference, and every comparison is made with steal-half, whatever the pinning
// (go-runtime, which cannot be pinned, is compared with the pinned steal-half and the legend says
// so). Before, a pinned run showed `-` for vs elision and vs tbb in every row and compared every
// case with go-runtime, the only name left at its defaults.
TEST(Summary, FindsEveryReferenceWithPinningOnAndOff) {
  if (!registered("tbb")) GTEST_SKIP() << "this build has no tbb (the TSan build leaves it out)";
  for (const std::string pin : {"on", "off"}) {
    SCOPED_TRACE("pin=" + pin);
    const ParamValues pinned{{"pin", pin}};
    std::vector<CaseResult> cases{fib_case("elision", pinned, 1, {1e6, 1e6, 1e6}),
                                  fib_case("steal-half", pinned, 1, {4e6, 4e6, 4e6}),
                                  fib_case("central", pinned, 1, {32e6, 32e6, 32e6}),
                                  fib_case("tbb", pinned, 1, {8e6, 8e6, 8e6}),
                                  fib_case("go-runtime", {}, 1, {2e6, 2e6, 2e6})};
    const std::string text = summary_table(cases);
    const std::string suffix = pin == "on" ? " pin=on" : "";
    const std::string steal = "steal-half" + suffix, central = "central" + suffix, tbb = "tbb" + suffix;
    // vs elision (elision / median), vs tbb (median / tbb), vs best peer (the fastest peer: go-runtime).
    const std::string steal_row = row_of(text, steal, 1), central_row = row_of(text, central, 1),
                      go_row = row_of(text, "go-runtime", 1);
    ASSERT_FALSE(steal_row.empty() || central_row.empty() || go_row.empty()) << text;
    EXPECT_NE(steal_row.find("  0.25x  "), std::string::npos) << steal_row;
    EXPECT_NE(steal_row.find("  0.50  "), std::string::npos) << steal_row;
    EXPECT_NE(steal_row.find("2.00 (go-runtime)"), std::string::npos) << steal_row;
    EXPECT_NE(central_row.find("  0.03x  "), std::string::npos) << central_row;
    EXPECT_NE(central_row.find("  4.00  "), std::string::npos) << central_row;
    EXPECT_NE(go_row.find("  0.50x  "), std::string::npos) << go_row;
    EXPECT_NE(go_row.find("  0.25  "), std::string::npos) << go_row;
    EXPECT_NE(row_of(text, tbb, 1).find("  1.00  "), std::string::npos) << text;
    // Every comparison is with steal-half (pinned when the run pins).
    EXPECT_NE(text.find(steal + " ran 8.00× faster than " + central + "\n"), std::string::npos) << text;
    EXPECT_NE(text.find(steal + " ran 2.00× faster than " + tbb + "\n"), std::string::npos) << text;
    EXPECT_NE(text.find("go-runtime ran 2.00× faster than " + steal + "\n"), std::string::npos) << text;
    EXPECT_NE(text.find("elision" + suffix + " ran 4.00× faster than " + steal + "\n"), std::string::npos) << text;
    EXPECT_EQ(count(text, "faster than"), 4u) << text;
    EXPECT_EQ(text.find("faster than go-runtime"), std::string::npos) << text;
    const bool noted = text.find("compared as they ran, with different machine settings") != std::string::npos;
    EXPECT_EQ(noted, pin == "on") << text;
  }
}

// The A/A control's two replicas are at steal-half's defaults whatever their label: compared
// with each other once, and every other case with one of them.
TEST(Summary, ComparesTheReplicasWithEachOtherOnce) {
  const std::string text = summary_table({fib_case("steal-half", {{"pin", "on"}, {"replica", "a"}}, 2, {10e6, 10e6, 10e6}),
                                          fib_case("steal-half", {{"pin", "on"}, {"replica", "b"}}, 2, {11e6, 11e6, 11e6}),
                                          fib_case("fair", {{"pin", "on"}}, 2, {20e6, 20e6, 20e6})});
  EXPECT_EQ(count(text, "faster than"), 2u) << text;
  EXPECT_NE(text.find("steal-half pin=on ran 1.10× faster than steal-half pin=on replica=b\n"), std::string::npos) << text;
  EXPECT_NE(text.find("steal-half pin=on ran 2.00× faster than fair pin=on\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace schedlab
