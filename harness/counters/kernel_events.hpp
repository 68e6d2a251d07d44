// kernel_events.hpp: the kernel back end, for what PAPI cannot count: the kernel's generic
// perf_event encodings (the "kernel:NAME" candidates, named as `perf stat -e` names them),
// opening one on a thread, and error texts that say why the kernel refused (no PMU,
// perf_event_paranoid, a seccomp filter). Also the system facts the other parts report with.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "counters/columns.hpp"
#include "errno_text.hpp"

namespace schedlab::counters {

struct KernelEvent {
  const char* name;  // after "kernel:", as `perf stat -e` spells it
  std::uint32_t type;
  std::uint64_t config;
  bool software;
};

// -1 when the file cannot be read (no perf_event support in the kernel at all).
int perf_event_paranoid();

// "perf_event_paranoid=N, not root": what decides whether the kernel lets us count.
std::string privilege_text();

// The core PMU ("cpu", or "cpu_core" on hybrid Intel parts) as the kernel registers it.
bool cpu_pmu_exposed();

pid_t this_tid();

// Whether a candidate names a kernel event ("kernel:NAME") rather than a PAPI one.
bool is_kernel_candidate(const std::string& candidate);

// The encoding a "kernel:NAME" candidate names; nullptr for an unknown name or a PAPI name.
const KernelEvent* find_kernel_event(const std::string& candidate);

// Returns the fd, or -errno. Events are opened disabled; a group member follows its leader.
int open_kernel_event(const KernelEvent& k, bool exclude_kernel, pid_t tid, int group_fd);

std::string kernel_open_error(const KernelEvent& k, int err);

// Opens the candidate on this thread and closes it again. Sets *exclude_kernel when a hardware
// event can only be counted in user space.
Tried try_kernel(const std::string& name, const KernelEvent* k, bool* exclude_kernel);

}  // namespace schedlab::counters
