// sim.cpp: finding Valgrind, its command line, reading callgrind's dump, and the client
// requests that bracket the measured region (see sim.hpp).
#include "counters/sim.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#if SCHEDLAB_HAVE_VALGRIND
#include <valgrind/callgrind.h>
#endif

namespace schedlab {

const char* const kSimulatorSees =
    "Valgrind runs one thread at a time and its cache is one hierarchy shared by all threads. So "
    "at 1 worker it is exact for the effects of order (LIFO vs FIFO, central vs per-P); at more "
    "workers it models a shared cache and does not see a task moving between two cores' private "
    "caches. The migration side stays with the `migrations` counter, and with PAPI where a PMU "
    "exists. Simulated rows are marked (`simulated` = 1): their wall time is Valgrind's, not "
    "comparable, and plots and claims leave it out of every time comparison.";

std::string valgrind_program() {
  if (const char* env = std::getenv("SCHEDLAB_VALGRIND"); env != nullptr && *env != '\0') return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/valgrind";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

std::optional<std::string> simulator_unavailable() {
#if !SCHEDLAB_HAVE_VALGRIND
  return std::string(
      "this build has no Valgrind client-request headers (valgrind/callgrind.h); install valgrind "
      "(apt-get install valgrind) and rebuild");
#elif defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return std::string("a sanitizer build cannot run under Valgrind; use the release build (build/release)");
#else
  const std::string program = valgrind_program();
  if (program.empty()) {
    return std::string("valgrind is not installed (not on PATH); install it (apt-get install valgrind) or set "
                       "SCHEDLAB_VALGRIND to its path");
  }
  if (::access(program.c_str(), X_OK) != 0) {
    return "SCHEDLAB_VALGRIND=" + program + " is not an executable; point it at valgrind or unset it";
  }
  return std::nullopt;
#endif
}

std::string valgrind_version() {
  const std::string program = valgrind_program();
  if (program.empty()) return {};
  FILE* p = ::popen(("'" + program + "' --version 2>/dev/null").c_str(), "r");
  if (p == nullptr) return {};
  char buf[128] = {};
  const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
  ::pclose(p);
  std::string v = got ? buf : "";
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  return v;
}

std::vector<std::string> simulator_command(const SimGeometry& g, const std::string& out_file) {
  return {valgrind_program(),
          "--tool=callgrind",
          "--cache-sim=yes",
          "--I1=" + g.i1.text(),
          "--D1=" + g.d1.text(),
          "--LL=" + g.ll.text(),
          "--callgrind-out-file=" + out_file,
          "-q"};
}

SimCounts read_region_counts(const std::string& out_file) {
  const std::string path = out_file + ".1";
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("callgrind wrote no dump of the measured region (" + path +
                             " is missing): the simulated child did not reach the end of the region");
  }
  std::vector<std::string> names;
  std::vector<std::uint64_t> totals;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "events:") {
      for (std::string n; fields >> n;) names.push_back(n);
    } else if (key == "totals:") {
      for (std::uint64_t v; fields >> v;) totals.push_back(v);
    }
  }
  if (names.empty() || totals.empty()) {
    throw std::runtime_error(path + " has no `events:` or `totals:` line: not a callgrind dump");
  }
  std::map<std::string, std::uint64_t> count;
  for (std::size_t i = 0; i < names.size(); ++i) count[names[i]] = i < totals.size() ? totals[i] : 0;  // trailing zeros are left out
  for (const char* needed : {"Ir", "D1mr", "D1mw", "DLmr", "DLmw"}) {
    if (count.find(needed) == count.end()) {
      throw std::runtime_error(path + " lacks the event " + needed + ": was --cache-sim=yes given?");
    }
  }
  return {count["Ir"], count["D1mr"] + count["D1mw"], count["DLmr"] + count["DLmw"]};
}

void simulated_region_begin() {
#if SCHEDLAB_HAVE_VALGRIND
  CALLGRIND_ZERO_STATS;
#endif
}

void simulated_region_end() {
#if SCHEDLAB_HAVE_VALGRIND
  CALLGRIND_DUMP_STATS_AT("schedlab measured region");
#endif
}

}  // namespace schedlab
