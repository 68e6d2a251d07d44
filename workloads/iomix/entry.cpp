// iomix's registry entry (workload_entry.hpp).
#include "entry_params.hpp"
#include "iomix/iomix.hpp"
#include "workload_entry.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_iomix() {
  WorkloadEntry e{"iomix", "--tasks tasks of --iters increments, each reading files at its midpoint through blocking()",
                  {task_count_param(20, 1000000, "tasks, each computing and reading"),
                   integer("iters", 1000000, 0, std::int64_t{1} << 40, "increments per task, half before the reads"),
                   integer("files", 4, 1, 100000, "files created for the run"),
                   size("file-size", "64K", 0, std::int64_t{1} << 34, "bytes per file"),
                   integer("reads-per-task", 1, 0, 1000000, "whole-file reads at each task's midpoint"),
                   choice("cold", "off", {"off", "on"}, "drop each file from the page cache before reading it"),
                   ParamSpec{"io-dir", ParamKind::path, "", "directory for the files (default $TMPDIR or /tmp)", 0, 0, {}}},
                  [](const ParamValues& p) {
                    return make_iomix(IomixParams{param_u64(p, "tasks"), param_u64(p, "iters"), param_u64(p, "files"),
                                                  param_u64(p, "file-size"), param_u64(p, "reads-per-task"),
                                                  param_str(p, "cold") == "on", param_str(p, "io-dir")});
                  }};
  e.rank = 30;
  e.go_twin = true;
  e.test_params = {{{"tasks", "8"}, {"iters", "1000"}, {"files", "3"}, {"file-size", "10000"}, {"reads-per-task", "2"}},
                   {{"tasks", "8"}, {"iters", "1000"}, {"files", "2"}, {"file-size", "4K"}, {"cold", "on"}}};
  return {e};
}

}  // namespace schedlab
