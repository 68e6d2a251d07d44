// fiber_guard.hpp: a stack overflow in a task becomes a one-line diagnosis, not a raw crash.
//
// Tasks run on two kinds of stack, and every backend's can overflow:
//   - fibers: the fiber runtime's (fair, central, steal-half) and Boost.Fiber's (boost-fiber,
//     boost-fiber-shared), both on StackAllocator's stacks (64 KiB by default, --stack-size), each
//     above a PROT_NONE guard page (stack.hpp);
//   - threads: oneTBB's and libgomp's threads, whose waits run other tasks nested on the waiting
//     thread's own stack (a deep task tree nests as deep there); os-threads' task threads (a
//     pthread stack of --stack-size); serial and the elision, which run on the harness thread.
// A task that recurses too deeply writes below its stack, into the guard page (a thread's, or a
// fiber's) or past the main thread's growth limit, and the kernel raises SIGSEGV on the thread
// whose stack it is. That stack has no room left, so the handler runs on a per-thread alternate
// signal stack: every thread that runs tasks is armed with one before it runs any.
//
// The handler tells an overflow from any other fault, names the case (the harness's label), the
// stack that was too small and the fix for that backend, writes the sidecar the harness prepared
// (diagnostics.hpp) and exits with status 1:
//   - a fiber runtime worker: the fault is inside the guard page of the fiber it runs (exact);
//   - a thread's own stack: the fault is in the kFrameReach below the lowest usable byte of the
//     thread's stack, whose bounds were recorded when the thread was armed (pthread_getattr_np:
//     not async-signal-safe, so never in the handler); the fix is the one recorded with it;
//   - a Boost.Fiber fiber (its stacks' bounds are inside the library): the fault is within
//     kFrameReach of the interrupted stack pointer, which is not on the thread's own stack. A
//     fault next to the stack pointer is the stack itself refusing the access: the push of a
//     call, or the first write to a new frame.
// Any other SIGSEGV is a crash, or a signal another process sent: it is reported as such
// (diagnostics.hpp) and the process ends by it, with the default action.
//
// Stacks handed out after the guard-page budget is spent (stack.hpp) have no guard page; an
// overflow there is not caught. The run's counters say how many stacks were unguarded.
//
// This header is the schedulers' half; the harness's half (what to call the task, what to leave
// on disk) is diagnostics.hpp, implemented in fiber_guard.cpp beside the handler that reads it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace schedlab {

// How far below a stack's end an overflow may fault: a frame is allocated by one move of the
// stack pointer and first written at either end, so the fault lands up to a frame below the
// stack. The workloads' frames are at most a few KiB; 64 KiB leaves room for a large one.
inline constexpr std::size_t kFrameReach = 64 * 1024;

// What makes a thread's own stack larger: named in the report of its overflow.
enum class ThreadStackFix : std::uint8_t {
  stack_limit,          // a thread whose stack follows RLIMIT_STACK (the harness thread, a std::thread)
  thread_stack_option,  // tbb's and openmp's threads: --thread-stack
  stack_size_option,    // os-threads' task threads: --stack-size
};

// Installs the process-wide SIGSEGV handler (idempotent, thread-safe).
void install_overflow_handler();

// The fiber runtime's workers: an alternate signal stack for the calling thread, mapped by
// arm_overflow_stack() when the worker starts and unmapped by release_overflow_stack() before it
// exits. A thread that already has one (AddressSanitizer gives every thread its own) keeps it.
void arm_overflow_stack();
void release_overflow_stack();

// Arms the calling thread, which runs tasks on its own stack (or, with fiber_stack_bytes, on
// Boost.Fiber fibers of that size): installs the handler, gives the thread an alternate signal
// stack (kept until the thread exits) and records its stack's bounds and `fix` for the report.
// The first call on a thread costs a few system calls and pthread_getattr_np; later ones, a
// thread_local test. Returns the usable bytes of the thread's stack (its guard excluded), so that
// a backend can check that the size it asked for is the size it got; 0 if unknown.
std::size_t guard_task_thread(ThreadStackFix fix, std::size_t fiber_stack_bytes = 0);

// The same for a thread that lives for one task (os-threads), without a system call to map
// memory: the alternate signal stack is this object, which lives in the thread's first frame
// (the thread's stack is made kAltStackBytes larger for it), and the thread's stack is taken to
// be the `stack_bytes` below it. Construct it first thing on the thread and let it die last.
class TaskThreadGuard {
 public:
  static constexpr std::size_t kAltStackBytes = 32 * 1024;  // the handler needs well under half

  explicit TaskThreadGuard(std::size_t stack_bytes) noexcept;
  ~TaskThreadGuard();
  TaskThreadGuard(const TaskThreadGuard&) = delete;
  TaskThreadGuard& operator=(const TaskThreadGuard&) = delete;

 private:
  alignas(64) unsigned char alt_stack_[kAltStackBytes];
  bool armed_ = false;  // the alternate stack is this object's, to be disabled before it dies
};

}  // namespace schedlab
