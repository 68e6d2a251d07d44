// runner_progress.hpp: the progress line on stderr (--progress): the repetition measured, the
// time elapsed and an estimate of the time left.
//
// Invariants: one line, rewritten in place, erased when the run ends; nothing is written when
// disabled. Used only by the runner's thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace schedlab::runner {

class ProgressLine {
 public:
  ProgressLine(bool enabled, std::size_t total) : enabled_(enabled), total_(total) {}
  void update(std::size_t done, const std::string& what) {
    if (!enabled_) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    char eta[32] = "?";
    if (done >= total_) {
      std::snprintf(eta, sizeof eta, "replacing flagged repetitions");
    } else if (done > 0) {
      std::snprintf(eta, sizeof eta, "%.0fs", elapsed / static_cast<double>(done) * static_cast<double>(total_ - done));
    }
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s  elapsed %.0fs  eta %s", done + 1, total_,
                 what.c_str(), elapsed, eta);
    std::fflush(stderr);
  }
  ~ProgressLine() {
    if (enabled_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool enabled_;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace schedlab::runner
