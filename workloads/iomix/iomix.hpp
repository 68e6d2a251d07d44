// iomix: the seeds' mixed CPU and file-I/O program (see iomix.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "../workload.hpp"

namespace schedlab {

struct IomixParams {
  std::uint64_t tasks = 20;
  std::uint64_t iters = 1000000;       // loop iterations per task, half before the reads
  std::uint64_t files = 4;             // files created in a fresh directory under `dir`
  std::uint64_t file_size = 64 * 1024; // bytes per file
  std::uint64_t reads_per_task = 1;    // whole-file reads at each task's midpoint
  bool cold = false;                   // drop each file's cached pages before reading it
  std::string dir;                     // where the files go; empty: $TMPDIR or /tmp
};

std::unique_ptr<Workload> make_iomix(IomixParams params);

}  // namespace schedlab
