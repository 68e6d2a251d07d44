// The go-runtime reference: schedlab-go's workloads run, check themselves and count their
// goroutines as schedlab counts tasks, errors come back as exceptions that say what is wrong,
// and the Go loop lengths are the C++ ones. Skipped only when there is no schedlab-go.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../loopback.hpp"
#include "fib/fib.hpp"
#include "go_reference.hpp"
#include "registry.hpp"
#include "loops/lengths.hpp"
#include "netmix/netmix.hpp"
#include "nqueens/nqueens.hpp"
#include "skynet/skynet.hpp"
#include "uts/uts.hpp"

namespace schedlab {
namespace {

using Args = std::vector<std::pair<std::string, std::string>>;

class GoReference : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = go_reference_unavailable()) GTEST_SKIP() << *why;
  }
};

// Runs one repetition and checks its task count.
void expect_runs(const std::string& workload, const Args& args, std::uint64_t tasks,
                 unsigned threads = 2) {
  SCOPED_TRACE(workload);
  const std::vector<GoRun> runs = run_go_reference(workload, args, threads, 0, 1, 0);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_GT(runs[0].wall_ns, 0);
  EXPECT_EQ(runs[0].tasks, static_cast<double>(tasks));
}

// The registry's go twins (WorkloadEntry::go_twin) are exactly the workloads the Go program
// says it has (`schedlab-go list`): neither list is written twice by hand.
TEST_F(GoReference, TwinsAreTheWorkloadsTheGoProgramHas) {
  std::FILE* pipe = ::popen(("'" + go_reference_binary() + "' list").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::set<std::string> go_has;
  char line[256];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    std::string name(line);
    while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
    go_has.insert(name);
  }
  ASSERT_EQ(::pclose(pipe), 0) << go_reference_binary() << " list failed";
  std::set<std::string> twins;
  for (const WorkloadEntry& w : workload_registry()) {
    EXPECT_EQ(go_supports_workload(w.name), w.go_twin) << w.name;
    if (w.go_twin) twins.insert(w.name);
  }
  EXPECT_FALSE(go_has.empty());
  EXPECT_EQ(go_has, twins);
}

TEST(GoReferenceSupport, ABadOverrideIsExplained) {
  const char* old = std::getenv("SCHEDLAB_GO_BINARY");
  const std::optional<std::string> saved =
      old != nullptr ? std::optional<std::string>(old) : std::nullopt;
  ::setenv("SCHEDLAB_GO_BINARY", "/nonexistent/schedlab-go", 1);
  const std::optional<std::string> why = go_reference_unavailable();
  EXPECT_THROW(run_go_reference("fib", {{"n", "5"}}, 1, 0, 1, 0), std::runtime_error);
  if (saved) {
    ::setenv("SCHEDLAB_GO_BINARY", saved->c_str(), 1);
  } else {
    ::unsetenv("SCHEDLAB_GO_BINARY");
  }
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("/nonexistent/schedlab-go"), std::string::npos) << *why;
  EXPECT_NE(why->find("SCHEDLAB_GO_BINARY"), std::string::npos) << *why;
}

TEST_F(GoReference, FibShapesCountTasksAsSchedlab) {
  for (const auto& [n, cutoff] : std::vector<std::pair<int, int>>{{15, 0}, {20, 12}, {2, 0}}) {
    const Args args{{"n", std::to_string(n)}, {"cutoff", std::to_string(cutoff)}};
    expect_runs("fib-go", args, fib_tasks(FibShape::go, n, cutoff) + 1);
    expect_runs("fib", args, fib_tasks(FibShape::cilk, n, cutoff) + 1);
  }
  expect_runs("fib", {{"n", "0"}, {"cutoff", "0"}}, 1);
}

// tzcnt's fib shape: base 1.
TEST_F(GoReference, FibGoBaseOne) {
  for (const int n : {0, 2, 15}) {
    expect_runs("fib-go", {{"n", std::to_string(n)}, {"cutoff", "0"}, {"base", "1"}},
                fib_tasks(FibShape::go, n, 0, 1) + 1);
  }
}

// The field's benchmarks: each twin checks its own answer and counts its goroutines as
// schedlab counts tasks (the table's sizes).
TEST_F(GoReference, FieldWorkloadsCountTasksAsSchedlab) {
  expect_runs("skynet", {{"leaves", "10000"}}, skynet_tasks(10000) + 1);
  expect_runs("skynet", {{"leaves", "1"}}, 1);
  expect_runs("nqueens", {{"n", "8"}}, *nqueens_tasks(8) + 1);
  for (const char* tree : {"mini-T1", "mini-T3"}) expect_runs("uts", {{"tree", tree}}, uts_tree(tree).nodes);
}

// Go's synchronisation: the twins check their own results (every token, the last prime, the
// channel's count and sum, the mutex's state) and count goroutines as schedlab counts tasks, on
// one P and two.
TEST_F(GoReference, SynchronisationWorkloadsCountTasksAsSchedlab) {
  for (const unsigned threads : {1u, 2u}) {
    expect_runs("pingpong", {{"pairs", "2"}, {"rounds", "300"}, {"hog", "1"}, {"hog-iters", "100000"}}, 2 * 2 + 1 + 1,
                threads);
    expect_runs("sieve", {{"primes", "60"}}, 60 + 1, threads);
    expect_runs("channel", {{"values", "5000"}, {"producers", "2"}, {"consumers", "3"}, {"capacity", "16"}}, 5 + 1,
                threads);
    expect_runs("lockmix", {{"tasks", "4"}, {"ops", "300"}, {"hold", "50"}, {"between", "50"}}, 4 + 1, threads);
  }
}

TEST_F(GoReference, FieldWorkloadsRefuseBadParameters) {
  for (const auto& [workload, args, says] : std::vector<std::tuple<std::string, Args, std::string>>{
           {"skynet", {{"leaves", "20"}}, "--leaves 20 is not a power of 10"},
           {"nqueens", {{"n", "21"}}, "--n 21 is out of range: use 1 <= n <= 20"},
           {"uts", {{"tree", "T9"}}, "--tree T9 is not a known tree"},
           {"fib-go", {{"base", "3"}}, "--base 3 is not a base case"},
           {"pingpong", {{"pairs", "0"}}, "--pairs 0"},
           {"sieve", {{"primes", "0"}}, "--primes 0"}}) {
    try {
      run_go_reference(workload, args, 1, 0, 1, 0);
      ADD_FAILURE() << workload << " accepted " << says;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
}

TEST_F(GoReference, WarmupAndRepetitions) {
  const std::vector<GoRun> runs = run_go_reference("fib-go", {{"n", "12"}}, 1, 2, 3, 0);
  EXPECT_EQ(runs.size(), 3u);
}

TEST_F(GoReference, LoopsAllSkews) {
  for (const char* skew : {"uniform", "one-long", "heavy-tail"}) {
    expect_runs("loops", {{"tasks", "50"}, {"iters", "1000"}, {"skew", skew}, {"seed", "7"}}, 51);
  }
}

TEST_F(GoReference, ABadParameterIsTheProgramsError) {
  try {
    run_go_reference("fib-go", {{"n", "0"}}, 1, 0, 1, 0);
    FAIL() << "fib-go n=0 ran";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "go-runtime fib-go: --n 0 is out of range: use 1 <= n <= 50");
  }
  EXPECT_THROW(run_go_reference("loops", {{"skew", "lumpy"}}, 1, 0, 1, 0), std::runtime_error);
  EXPECT_THROW(run_go_reference("loops", {{"no-such-param", "1"}}, 1, 0, 1, 0), std::runtime_error);
}

// iomix reads files that the C++ workload makes; here the test makes them.
class GoIomix : public GoReference {
 protected:
  static constexpr std::uint64_t kFiles = 4;
  static constexpr std::uint64_t kFileSize = 10000;

  void SetUp() override {
    GoReference::SetUp();
    if (IsSkipped()) return;
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "schedlab-go-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    for (std::uint64_t f = 0; f < kFiles; ++f) {
      std::ofstream out(file(f), std::ios::binary);
      out << std::string(kFileSize, 'x');
      ASSERT_TRUE(out.good());
    }
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string file(std::uint64_t f) const { return dir_ + "/file-" + std::to_string(f); }
  // What the runner passes: every iomix parameter, then the workload's external_args().
  Args args(const std::string& cold) const {
    return {{"tasks", "20"},
            {"iters", "100001"},
            {"files", std::to_string(kFiles)},
            {"file-size", std::to_string(kFileSize)},
            {"reads-per-task", "3"},
            {"cold", cold},
            {"io-dir", std::filesystem::path(dir_).parent_path().string()},
            {"dir", dir_}};
  }

  std::string dir_;
};

TEST_F(GoIomix, WarmAndCold) {
  expect_runs("iomix", args("off"), 21);
  expect_runs("iomix", args("on"), 21);
}

TEST_F(GoIomix, AMissingFileIsNamed) {
  std::filesystem::remove(file(3));
  try {
    run_go_reference("iomix", args("off"), 2, 0, 1, 0);
    FAIL() << "iomix ran without " << file(3);
  } catch (const std::runtime_error& e) {
    const std::string want =
        "go-runtime iomix: cannot read " + file(3) + ": no such file or directory; ";
    EXPECT_EQ(std::string(e.what()).rfind(want, 0), 0u) << e.what();
  }
}

TEST_F(GoIomix, AFileOfTheWrongSizeFailsTheCheck) {
  std::filesystem::resize_file(file(1), kFileSize - 1);
  EXPECT_THROW(run_go_reference("iomix", args("off"), 2, 0, 1, 0), std::runtime_error);
}

// netmix's Go twin talks to the C++ workload's echo server, whose port it is given, and checks
// every reply itself; the server counts what it received.
TEST_F(GoReference, NetmixAgainstTheWorkloadsServer) {
  NetmixParams p;
  p.conns = 12;
  p.requests = 30;
  p.iters = 1000;
  p.server_delay_us = 100;
  auto work = make_netmix(p);
  work->prepare();
  Args args{{"conns", "12"}, {"requests", "30"}, {"iters", "1000"}, {"server-delay-us", "100"}, {"request-bytes", "64"}};
  for (auto& extra : work->external_args()) args.push_back(extra);
  const std::vector<GoRun> runs = run_go_reference("netmix", args, 1, 0, 1, 0);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].tasks, 13.0);
  ASSERT_TRUE(runs[0].threads.has_value()) << "schedlab-go reports the threads Go created";
  EXPECT_GE(*runs[0].threads, 2u) << "at least the main thread and sysmon";
  work->cleanup();
}

// With sched-latency=on each result line carries the measured region's scheduling latencies
// from Go's own runtime/metrics histogram (workloads/go/latency.go); without, none.
TEST_F(GoReference, SchedLatenciesFromGosOwnHistogram) {
  const Args args{{"n", "15"}, {"cutoff", "0"}};
  const std::vector<GoRun> off = run_go_reference("fib-go", args, 2, 0, 1, 0);
  ASSERT_EQ(off.size(), 1u);
  EXPECT_FALSE(off[0].sched_latency.has_value());
  Args on = args;
  on.emplace_back("sched-latency", "on");
  const std::vector<GoRun> runs = run_go_reference("fib-go", on, 2, 0, 1, 0);
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_TRUE(runs[0].sched_latency.has_value());
  const LatencyDistribution& d = *runs[0].sched_latency;
  // Go tracks about one transition in 8 (gTrackingPeriod): fib-go(15)'s 1973 goroutines start
  // once each and most resume after a join, so some hundreds are recorded, never more than all.
  EXPECT_GT(d.count(), 0u);
  EXPECT_LT(d.count(), 2u * 1973u);
  EXPECT_FALSE(d.max_exact()) << "Go keeps no exact max";
  EXPECT_LE(*d.percentile(50), *d.percentile(99));
}

// --load open: the Go twin serves the C++ workload's load generator, which measures and checks.
TEST_F(GoReference, NetmixOpenLoopServesTheWorkloadsGenerator) {
  NetmixParams p;
  p.load = NetmixLoad::open;
  p.conns = 3;
  p.requests = 5;
  p.iters = 100;
  p.rate = 20000;
  auto work = make_netmix(p);
  work->prepare();
  Args args{{"conns", "3"}, {"requests", "5"}, {"iters", "100"}, {"load", "open"}};
  for (auto& extra : work->external_args()) args.push_back(extra);
  const std::vector<GoRun> runs = run_go_reference("netmix", args, 1, 1, 1, 0);  // a warm-up session too
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(work->check_external(), "");
  const std::optional<RequestLatency> r = work->request_latency();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->latency.count(), 15u);
  work->cleanup();
}

TEST_F(GoReference, NetmixRefusedConnectionIsNamed) {
  const std::string port = std::to_string(test_util::refusing_port());
  try {
    run_go_reference("netmix", {{"conns", "3"}, {"requests", "2"}, {"port", port}}, 1, 0, 1, 0);
    FAIL() << "netmix connected to a port nobody listens on";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("netmix connection "), std::string::npos) << what;
    EXPECT_NE(what.find("cannot connect to 127.0.0.1:" + port), std::string::npos) << what;
    EXPECT_NE(what.find("connection refused"), std::string::npos) << what;
  }
}

// `schedlab-go loop-lengths` prints the Go generator's lengths; they must be the C++ ones.
std::vector<std::uint64_t> go_loop_lengths(std::uint64_t tasks, std::uint64_t iters,
                                           const std::string& skew, std::uint64_t seed,
                                           const std::string& long_at) {
  const std::string binary = go_reference_binary();
  EXPECT_EQ(binary.find('\''), std::string::npos) << "the test quotes the path with ''";
  const std::string command = "'" + binary + "' loop-lengths --tasks=" + std::to_string(tasks) +
                              " --iters=" + std::to_string(iters) + " --skew=" + skew +
                              " --seed=" + std::to_string(seed) + " --long-at=" + long_at;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << command;
    return {};
  }
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << command << ": " << out;
  return nlohmann::json::parse(out).at("lengths").get<std::vector<std::uint64_t>>();
}

TEST_F(GoReference, LoopLengthsMatchTheCpp) {
  struct Case {
    std::uint64_t tasks, iters;
    const char* skew;
    std::uint64_t seed;
    const char* long_at = "first";
  };
  for (const Case& c : std::vector<Case>{{2000, 1000000, "uniform", 1},
                                         {2000, 1000000, "one-long", 1},
                                         {2000, 1000000, "one-long", 1, "last"},
                                         {2000, 1000000, "one-long", 9, "random"},
                                         {2000, 1000000, "heavy-tail", 1},
                                         {2000, 1000000, "heavy-tail", 2},
                                         {100000, 1000, "heavy-tail", 12345},
                                         {7, 3, "heavy-tail", 0},
                                         {1, 1, "one-long", 1}}) {
    SCOPED_TRACE(std::string(c.skew) + " tasks " + std::to_string(c.tasks) + " seed " +
                 std::to_string(c.seed) + " long at " + c.long_at);
    EXPECT_EQ(go_loop_lengths(c.tasks, c.iters, c.skew, c.seed, c.long_at),
              loop_lengths(c.tasks, c.iters, c.skew, c.seed, c.long_at));
  }
}

TEST(LoopLengths, Shapes) {
  EXPECT_EQ(loop_lengths(3, 10, "uniform", 1), (std::vector<std::uint64_t>{10, 10, 10}));
  EXPECT_EQ(loop_lengths(4, 10, "one-long", 1), (std::vector<std::uint64_t>{20, 10, 10, 10}));
  EXPECT_EQ(loop_lengths(4, 10, "one-long", 1, "last"), (std::vector<std::uint64_t>{10, 10, 10, 20}));
  // The random position is drawn from the seed: the same seed, the same place.
  const std::vector<std::uint64_t> r = loop_lengths(1000, 10, "one-long", 5, "random");
  EXPECT_EQ(std::count(r.begin(), r.end(), 5000u), 1);
  EXPECT_EQ(r, loop_lengths(1000, 10, "one-long", 5, "random"));
  EXPECT_NE(r, loop_lengths(1000, 10, "one-long", 6, "random"));
  EXPECT_THROW(loop_lengths(4, 10, "one-long", 1, "middle"), std::invalid_argument);
  EXPECT_THROW(loop_lengths(4, 10, "lumpy", 1), std::invalid_argument);
  EXPECT_THROW(loop_lengths(1ULL << 33, 1ULL << 33, "uniform", 1), std::invalid_argument);
  // heavy-tail: within the clamp, and a mean near iters (Pareto, alpha 1.5: slow to converge).
  const std::vector<std::uint64_t> h = loop_lengths(100000, 1000000, "heavy-tail", 3);
  double sum = 0;
  for (const std::uint64_t n : h) {
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, 100000ULL * 1000000 / 4);
    sum += static_cast<double>(n);
  }
  EXPECT_NEAR(sum / static_cast<double>(h.size()), 1e6, 1e5);
  EXPECT_EQ(h, loop_lengths(100000, 1000000, "heavy-tail", 3));
  EXPECT_NE(loop_lengths(100, 1000, "heavy-tail", 3), loop_lengths(100, 1000, "heavy-tail", 4));
  EXPECT_NE(h, loop_lengths(100000, 1000000, "heavy-tail", 4));
}

}  // namespace
}  // namespace schedlab
