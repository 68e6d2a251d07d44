// memory_budget.hpp: fail early and clearly instead of meeting the kernel's OOM killer.
//
// Fork-join under a FIFO order keeps nearly the whole task tree alive: fib(30) under `central`
// holds ~595k live tasks and ~437k fiber stacks, 1.93 GB resident, and every step of n multiplies
// that by ~1.6, so n = 35 wants ~20 GB and ends in the OOM killer, which leaves no message and a
// sidecar that still says "running". So the fiber runtime charges what its tasks hold against one
// process-wide budget each time it creates a fiber (the moment its memory grows) and, when the
// next fiber would pass the budget, stops the run with a ResourceError that names the live-task
// count and the fix.
//
// The charge estimates resident memory, not address space: a fiber stack is mapped at
// --stack-size but commits only the pages it touches, and fib's frames touch one. Measured
// (central fib(30), one thread, release build): 1,929,876 KiB resident with 437,057 stacks and
// 594,729 live tasks, which one page plus the Fiber record per stack and kTaskRecordBytes per
// live task reproduce to within 1%. A task that recurses deeply commits more than one page, so
// the estimate is a floor on what stacks hold. Tasks queued without a stack (loops' wait group)
// are charged only when a fiber is created; their count is bounded by the workloads' parameters.
#pragma once

#include <cstdint>
#include <string>

namespace schedlab {

// The default budget: this share of MemAvailable (/proc/meminfo) when the process first asks.
// Half: the run stops while the rest of the machine (the kernel's caches, other processes, the
// harness's own heap) still has room, instead of the OOM killer choosing a victim.
inline constexpr double kDefaultMemoryShare = 0.5;

// Charged per live task: a Task with a small callable and its result slot is 96-112 bytes
// (api.hpp's TaskWith plus the allocator's header), served from the 128-byte size class of
// task_memory.cpp.
inline constexpr std::uint64_t kTaskRecordBytes = 128;

// The smallest --memory-budget: below a MiB not even the workers' first fibers fit.
inline constexpr std::int64_t kMinMemoryBudget = std::int64_t{1} << 20;

struct MemoryBudget {
  std::uint64_t bytes = 0;  // 0: no budget (MemAvailable could not be read)
  std::string source;       // "--memory-budget" or "50% of MemAvailable (N MiB)"
};

// Replaces the budget (the harness's --memory-budget). Call before the first run.
void set_memory_budget(std::uint64_t bytes);
// The budget in force: set_memory_budget's, else kDefaultMemoryShare of MemAvailable, read once.
MemoryBudget memory_budget();

// ---- for the fiber runtime ------------------------------------------------------------------
// Charges `bytes` (a new fiber) on top of everything charged so far and of `transient` bytes
// that are not charged (the live task records); false, charging nothing, when the sum would pass
// the budget. Thread-safe, lock-free.
bool memory_try_charge(std::uint64_t bytes, std::uint64_t transient) noexcept;
// Gives back what memory_try_charge charged (a runtime unmapping its stacks).
void memory_release(std::uint64_t bytes) noexcept;
// Everything charged now, by every runtime of the process.
std::uint64_t memory_charged() noexcept;

}  // namespace schedlab
