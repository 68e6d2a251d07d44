// The --trace file (harness/chrome_trace): every event lies within its run, measured from the
// first run's start, whatever the workers recorded before the run began.
#include "chrome_trace.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace schedlab {
namespace {

TEST(ChromeTrace, SlicesAreClippedToTheirRunAndNeverBeforeTheOrigin) {
  const auto path = std::filesystem::temp_directory_path() / ("schedlab-trace-" + std::to_string(::getpid()) + ".json");
  ChromeTrace trace(path.string(), 100);
  // Run 1 lasts [1000, 5000] ns. Worker 0 parked at 400, before the run began, and woke at 1500;
  // worker 1 ran a task past the run's end (recorded after the root finished).
  trace.add_run("run 1",
                {WorkerTrace{0, {{400, 1500, TraceKind::park, 0}, {1500, 3000, TraceKind::task, 0}}, 0},
                 WorkerTrace{1, {{2000, 9000, TraceKind::task, 0}, {2500, 2500, TraceKind::steal, 3}}, 0}},
                1000, 5000);
  // Run 2 lasts [10000, 12000]; a park that began during run 1's tail.
  trace.add_run("run 2", {WorkerTrace{0, {{4000, 11000, TraceKind::park, 0}}, 0}}, 10000, 12000);
  trace.write();
  std::ifstream in(path);
  const nlohmann::json file = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  std::vector<std::pair<double, double>> slices;  // (ts, ts + dur) in µs, per pid
  for (const auto& e : file["traceEvents"]) {
    if (e["ph"] == "M") continue;
    const double ts = e["ts"].get<double>();
    const double end = ts + (e.contains("dur") ? e["dur"].get<double>() : 0.0);
    const int pid = e["pid"].get<int>();
    const double run_begin = pid == 1 ? 0.0 : 9.0, run_end = pid == 1 ? 4.0 : 11.0;  // µs from 1000 ns
    EXPECT_GE(ts, run_begin) << e.dump();
    EXPECT_LE(end, run_end) << e.dump();
    slices.emplace_back(ts, end);
  }
  ASSERT_EQ(slices.size(), 5u);
  EXPECT_DOUBLE_EQ(slices[0].first, 0.0);  // the early park starts at the run's start
  EXPECT_DOUBLE_EQ(slices[0].second, 0.5);
  EXPECT_DOUBLE_EQ(slices[4].first, 9.0);
}

// The file is created when the run starts (so that an unwritable path is refused before anything
// runs) and removed again if the run does not complete it: no half trace is left behind.
TEST(ChromeTrace, ATraceNotWrittenLeavesNoFile) {
  const auto path = std::filesystem::temp_directory_path() / ("schedlab-trace-unfinished-" + std::to_string(::getpid()) + ".json");
  {
    ChromeTrace trace(path.string(), 100);
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ChromeTrace, AnExistingFileIsRefusedAndKept) {
  const auto path = std::filesystem::temp_directory_path() / ("schedlab-trace-existing-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << "precious\n";
  try {
    ChromeTrace trace(path.string(), 100);
    ADD_FAILURE() << "an existing file was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("File exists (EEXIST)"), std::string::npos) << e.what();
  }
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "precious");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace schedlab
