// safepoint.hpp: the check a task's inner loops make so that it can be preempted (Go's
// function-prologue check before Go 1.14).
//
// Go's system monitor marks a goroutine that has run longer than 10 ms (forcePreemptNS) by
// setting its stack guard to a value every function prologue's stack check fails, and the
// goroutine yields at its next call (gopreempt_m: to the back of the global run queue). A
// loop that makes no call could not be preempted before Go 1.14, which since interrupts it with
// a signal (asynchronous preemption). schedlab does what Go did before 1.14: the fiber
// schedulers' monitors mark a task that has held its processor for 10 ms (--preempt
// safepoint), and the task yields at its next safe point, a call of safepoint(). The loops of
// the workloads call it (workloads/spin.hpp's count_up, every kSafepointEvery iterations), and
// so do spawn, WaitGroup::go and every channel and mutex operation (api.hpp), as every Go call
// (newproc, chansend, Lock) checks its prologue. A loop that never calls it is not preempted: schedlab does not interrupt code with a signal,
// which would need every task's code to be async-safe at any instruction (Go's compiler keeps
// the maps for that; a C++ compiler does not).
//
// The check is one relaxed load of a process-wide word and a branch, taken only while some
// monitor has a mark out: the slow path (Scheduler::preempt_point) then asks the running
// scheduler whether the mark is for the calling task.
#pragma once

#include <atomic>
#include <cstdint>

namespace schedlab {

namespace detail {
// How many monitors have a preemption mark out now (each counts itself once). Read by every
// safe point; written a few times a second at most.
inline constinit std::atomic<std::uint32_t> g_preempt_pending{0};
// safepoint()'s slow path: the active scheduler's preempt_point(), if a run is active.
void preempt_slow();
}  // namespace detail

// A safe point: if the running task's time slice is over (its scheduler's monitor marked it),
// it yields here and goes to the back of the queue (Go's gopreempt_m). Callable anywhere; does
// nothing outside a run, under a scheduler without preemption, or with --preempt off.
inline void safepoint() {
  if (detail::g_preempt_pending.load(std::memory_order_relaxed) != 0) [[unlikely]] detail::preempt_slow();
}

}  // namespace schedlab
