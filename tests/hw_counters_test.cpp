// Tests of harness/counters: counter selection, availability on machines with and without a
// PMU, and per-thread counting of helper threads as the runner counts worker threads.
//
// Nothing here assumes a PMU: a hardware column is checked to be either unavailable with a
// reason (and never 0), or to count. Software-event tests skip, with the reason, only where the
// machine does not count software events at all (perf_event disabled or refused).
#include "counters/hw_counters.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "params.hpp"

namespace schedlab {
namespace {

// A thread that, on request, sleeps n times (each sleep is one voluntary context switch) and
// otherwise blocks, so that it stands in for a parked worker thread.
class Helper {
 public:
  Helper() : thread_([this] { loop(); }) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return tid_ != 0; });
  }
  ~Helper() { exit(); }
  pid_t tid() const { return tid_; }

  void sleep_times(int n) {
    std::unique_lock lock(mu_);
    pending_ = n;
    cv_.notify_all();
    cv_.wait(lock, [&] { return pending_ == 0; });
  }
  // Ends the thread and joins it: its tid no longer names a live thread.
  void exit() {
    {
      std::lock_guard lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    tid_ = static_cast<pid_t>(syscall(SYS_gettid));
    cv_.notify_all();
    for (;;) {
      cv_.wait(lock, [&] { return pending_ > 0 || quit_; });
      if (quit_) return;
      const int n = pending_;
      lock.unlock();
      for (int i = 0; i < n; ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
      lock.lock();
      pending_ = 0;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  pid_t tid_ = 0;
  int pending_ = 0;
  bool quit_ = false;
  std::thread thread_;  // last: started after the members it uses
};

std::optional<long long> value_of(
    const std::vector<std::pair<std::string, std::optional<long long>>>& values,
    const std::string& column) {
  for (const auto& [c, v] : values) {
    if (c == column) return v;
  }
  ADD_FAILURE() << "column " << column << " missing from stop()";
  return std::nullopt;
}

const CounterAvailability& availability_of(const HwCounters& hw, const std::string& column) {
  for (const CounterAvailability& a : hw.availability()) {
    if (a.column == column) return a;
  }
  throw std::logic_error("no column " + column);
}

// Skips the calling test when context switches cannot be counted on this machine.
#define REQUIRE_CONTEXT_SWITCHES(hw)                                                         \
  do {                                                                                       \
    const CounterAvailability& a_ = availability_of(hw, "perf_context_switches");            \
    if (!a_.available) GTEST_SKIP() << "context switches not countable here: " << a_.reason; \
  } while (0)

TEST(CounterSelection, GroupsAndLists) {
  EXPECT_EQ(parse_counter_selection("default").size(), hw_events().size());
  EXPECT_TRUE(parse_counter_selection("none").empty());
  EXPECT_EQ(parse_counter_selection("sw"),
            (std::vector<std::string>{"perf_context_switches", "perf_cpu_migrations",
                                      "perf_page_faults"}));
  EXPECT_EQ(parse_counter_selection("cache"),
            (std::vector<std::string>{"papi_l1_dcm", "papi_l2_dcm", "papi_l3_tcm"}));
  // CSV order, whatever the order given; duplicates once.
  EXPECT_EQ(parse_counter_selection("perf_page_faults, papi_tot_ins,perf_page_faults"),
            (std::vector<std::string>{"papi_tot_ins", "perf_page_faults"}));
}

TEST(CounterSelection, ColumnsInCsvOrder) {
  const std::vector<std::string> expected = {
      "papi_l1_dcm",  "papi_l2_dcm",           "papi_l3_tcm",         "papi_tot_ins",
      "papi_tot_cyc", "perf_context_switches", "perf_cpu_migrations", "perf_page_faults"};
  ASSERT_EQ(hw_events().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(hw_events()[i].column, expected[i]);
    EXPECT_FALSE(hw_events()[i].candidates.empty());
  }
}

TEST(CounterSelection, UnknownNameIsNamed) {
  try {
    parse_counter_selection("papi_tot_ins,l4_misses");
    FAIL() << "no ParamError";
  } catch (const ParamError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown counter 'l4_misses'"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("papi_tot_ins"), std::string::npos) << "lists the choices";
  }
  EXPECT_THROW(parse_counter_selection(""), ParamError);
  EXPECT_THROW(HwCounters({"bogus"}), ParamError);
}

TEST(HwCounters, EveryColumnAvailableOrExplained) {
  HwCounters hw(parse_counter_selection("default"));
  ASSERT_EQ(hw.availability().size(), hw_events().size());
  for (const CounterAvailability& a : hw.availability()) {
    if (a.available) {
      EXPECT_FALSE(a.event.empty()) << a.column;
    } else {
      EXPECT_TRUE(a.event.empty()) << a.column;
      EXPECT_FALSE(a.reason.empty()) << a.column << " is unavailable without a reason";
    }
  }
}

// On a machine without a PMU (this project's VM) the hardware columns are unavailable and read
// as "not measured", never 0; with a PMU they count.
TEST(HwCounters, HardwareColumnsNotMeasuredAreNulloptNeverZero) {
  HwCounters hw(parse_counter_selection("default"));
  Helper h;
  hw.start({h.tid()});
  h.sleep_times(10);
  const auto values = hw.stop();
  for (const HwEvent& e : hw_events()) {
    if (!e.hardware) continue;
    const CounterAvailability& a = availability_of(hw, e.column);
    const std::optional<long long> v = value_of(values, e.column);
    if (!a.available) {
      EXPECT_FALSE(a.reason.empty()) << e.column;
      EXPECT_FALSE(v.has_value()) << e.column << " is unavailable but stop() gave " << *v;
    } else if (e.column == "papi_tot_ins" || e.column == "papi_tot_cyc") {
      ASSERT_TRUE(v.has_value()) << e.column;
      EXPECT_GT(*v, 0) << e.column << " counted nothing on a thread that ran";
    }
  }
}

TEST(HwCounters, ContextSwitchesOfHelperThreads) {
  HwCounters hw(parse_counter_selection("sw"));
  REQUIRE_CONTEXT_SWITCHES(hw);
  Helper a, b;
  hw.start({a.tid(), b.tid()});
  a.sleep_times(50);
  b.sleep_times(50);
  const auto values = hw.stop();
  const std::optional<long long> cs = value_of(values, "perf_context_switches");
  ASSERT_TRUE(cs.has_value());
  EXPECT_GE(*cs, 100) << "each of 2 x 50 sleeps switches its thread out";
  if (availability_of(hw, "perf_page_faults").available) {
    EXPECT_TRUE(value_of(values, "perf_page_faults").has_value());
  }
}

TEST(HwCounters, SummedOverThreads) {
  HwCounters hw(parse_counter_selection("perf_context_switches"));
  REQUIRE_CONTEXT_SWITCHES(hw);
  Helper a, b;
  hw.start({a.tid()});
  a.sleep_times(50);
  b.sleep_times(50);  // not counted
  const long long one = value_of(hw.stop(), "perf_context_switches").value_or(-1);
  hw.start({a.tid(), b.tid()});
  a.sleep_times(50);
  b.sleep_times(50);
  const long long two = value_of(hw.stop(), "perf_context_switches").value_or(-1);
  EXPECT_GE(one, 50);
  EXPECT_LT(one, 100) << "the thread not asked for was counted";
  EXPECT_GE(two, 100);
  EXPECT_GE(two, one);
}

// Cached event sets are reset at each start: a run counts its own region only, also when the
// set of threads changes between runs and back.
TEST(HwCounters, EachRunCountsOnlyItsRegion) {
  HwCounters hw(parse_counter_selection("perf_context_switches"));
  REQUIRE_CONTEXT_SWITCHES(hw);
  Helper a, b;
  hw.start({a.tid()});
  a.sleep_times(60);
  const long long first = value_of(hw.stop(), "perf_context_switches").value_or(-1);
  hw.start({b.tid()});
  b.sleep_times(5);
  const long long other = value_of(hw.stop(), "perf_context_switches").value_or(-1);
  hw.start({a.tid()});
  a.sleep_times(5);
  const long long again = value_of(hw.stop(), "perf_context_switches").value_or(-1);
  EXPECT_GE(first, 60);
  EXPECT_GE(other, 5);
  EXPECT_LT(other, 30);
  EXPECT_GE(again, 5);
  EXPECT_LT(again, 30) << "counts of an earlier run leaked into a later one";
}

TEST(HwCounters, ThreadExitingBeforeStop) {
  HwCounters hw(parse_counter_selection("default"));
  REQUIRE_CONTEXT_SWITCHES(hw);
  Helper a, b;
  hw.start({a.tid(), b.tid()});
  a.sleep_times(20);
  b.sleep_times(20);
  const pid_t gone = b.tid();
  b.exit();  // exits and is joined before stop()
  const auto values = hw.stop();
  // The kernel keeps an exited thread's counts, so the sum is complete; a back end that
  // cannot read them must say so and report nothing rather than a partial sum.
  bool noted = false;
  for (const std::string& n : hw.notes())
    noted = noted || n.find(std::to_string(gone)) != std::string::npos;
  EXPECT_TRUE(noted) << "the exit of thread " << gone << " is not in notes()";
  const std::optional<long long> cs = value_of(values, "perf_context_switches");
  if (cs) {
    EXPECT_GE(*cs, 40);
  }
  const std::string used = availability_of(hw, "perf_context_switches").event;
  if (used.rfind("kernel:", 0) == 0) {
    EXPECT_TRUE(cs.has_value()) << "kernel back end lost the counts";
  }

  // The dead tid handed in again (a stale worker list) is skipped, the live one still counts.
  hw.start({a.tid(), gone});
  a.sleep_times(10);
  const std::optional<long long> next = value_of(hw.stop(), "perf_context_switches");
  ASSERT_TRUE(next.has_value());
  EXPECT_GE(*next, 10);
  EXPECT_LT(*next, 40);
}

std::size_t open_descriptors() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Schedulers come and go during a benchmark; the sets cached for their threads must not pile up.
TEST(HwCounters, ThreadsThatComeAndGoDoNotKeepDescriptors) {
  HwCounters hw(parse_counter_selection("default"));
  REQUIRE_CONTEXT_SWITCHES(hw);
  {
    Helper warm;  // the first run may open things once (PAPI, the probe)
    hw.start({warm.tid()});
    hw.stop();
  }
  const std::size_t before = open_descriptors();
  for (int i = 0; i < 50; ++i) {
    Helper h;
    hw.start({h.tid()});
    h.sleep_times(1);
    EXPECT_TRUE(value_of(hw.stop(), "perf_context_switches").has_value());
  }
  EXPECT_LE(open_descriptors(), before + 10) << "descriptors of exited threads were kept";
}

TEST(HwCounters, NoThreadsMeansNotMeasured) {
  HwCounters hw(parse_counter_selection("default"));
  hw.start({});
  for (const auto& [column, v] : hw.stop()) EXPECT_FALSE(v.has_value()) << column;
}

// Every thread handed in has exited (a stale worker list): the notes say so, and do not blame the
// scheduler for reporting no threads.
TEST(HwCounters, EveryThreadGoneIsSaidSo) {
  HwCounters hw(parse_counter_selection("sw"));
  REQUIRE_CONTEXT_SWITCHES(hw);
  pid_t gone = 0;
  {
    Helper h;
    gone = h.tid();
  }
  hw.start({gone});
  for (const auto& [column, v] : hw.stop()) EXPECT_FALSE(v.has_value()) << column;
  bool named = false;
  for (const std::string& n : hw.notes()) {
    EXPECT_EQ(n.find("reports none"), std::string::npos) << n;
    named = named || n.find(std::to_string(gone)) != std::string::npos;
  }
  EXPECT_TRUE(named) << "thread " << gone << " is not named in notes()";
}

// A worker whose tid is not known yet (0) still runs tasks: a sum without it would be partial.
TEST(HwCounters, UnknownTidMeansNotMeasured) {
  HwCounters hw(parse_counter_selection("sw"));
  REQUIRE_CONTEXT_SWITCHES(hw);
  Helper a;
  hw.start({a.tid(), 0});
  a.sleep_times(5);
  for (const auto& [column, v] : hw.stop()) EXPECT_FALSE(v.has_value()) << column;
  EXPECT_FALSE(hw.notes().empty());
  hw.start({a.tid()});  // and the next run is fine
  a.sleep_times(5);
  EXPECT_GE(value_of(hw.stop(), "perf_context_switches").value_or(-1), 5);
}

TEST(HwCounters, EmptySelection) {
  HwCounters hw(parse_counter_selection("none"));
  EXPECT_TRUE(hw.availability().empty());
  Helper a;
  hw.start({a.tid()});
  EXPECT_TRUE(hw.stop().empty());
}

TEST(HwCounters, StartStopMustPair) {
  HwCounters hw(parse_counter_selection("sw"));
  EXPECT_THROW(hw.stop(), std::logic_error);
  Helper a;
  hw.start({a.tid()});
  EXPECT_THROW(hw.start({a.tid()}), std::logic_error);
  hw.stop();
}

TEST(HwCounters, MetadataForTheSidecar) {
  HwCounters hw(parse_counter_selection("default"));
  const nlohmann::json m = counter_metadata(hw);
  ASSERT_TRUE(m.contains("available"));
  ASSERT_TRUE(m.contains("unavailable"));
  EXPECT_EQ(m["available"].size() + m["unavailable"].size(), hw_events().size());
  for (const CounterAvailability& a : hw.availability()) {
    if (a.available) {
      EXPECT_EQ(m["events"][a.column], a.event);
    } else {
      EXPECT_EQ(m["unavailable"][a.column], a.reason);
    }
  }
  EXPECT_EQ(m["multiplexed"], hw.multiplexed());
  EXPECT_NE(m["scope"].get<std::string>().find("worker threads alive at run start"),
            std::string::npos);
}

TEST(HwCounters, Report) {
  std::ostringstream out;
  EXPECT_EQ(print_counter_report(out), 0);
  for (const HwEvent& e : hw_events())
    EXPECT_NE(out.str().find(e.column), std::string::npos) << e.column;
  EXPECT_NE(out.str().find("perf_event_paranoid"), std::string::npos);
}

// What the runner pays around each measured run: 2 worker threads, all 8 columns selected.
// Printed, with a loose bound that catches re-creating the event sets on every run.
TEST(HwCounters, StartStopCostPerRun) {
  HwCounters hw(parse_counter_selection("default"));
  Helper a, b;
  const std::vector<pid_t> tids = {a.tid(), b.tid()};
  hw.start(tids);  // first run opens the sets
  hw.stop();
  constexpr int kRuns = 2000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) {
    hw.start(tids);
    hw.stop();
  }
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      kRuns;
  std::size_t available = 0;
  for (const CounterAvailability& c : hw.availability()) available += c.available;
  std::cout << "[ cost     ] start()+stop(), 2 threads, " << available
            << " of 8 events available: " << us << " us per run\n";
  RecordProperty("start_stop_us", std::to_string(us));
  EXPECT_LT(us, 2000.0);
}

}  // namespace
}  // namespace schedlab
