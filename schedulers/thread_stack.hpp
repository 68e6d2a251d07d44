// thread_stack.hpp: the stacks of the threads tbb and openmp run tasks on (--thread-stack).
//
// oneTBB and libgomp run a task that a waiting task waits for on the waiting thread's own stack,
// nested under the wait (TBB's task_group::wait, libgomp's taskwait): a task tree nests as deep
// on one thread's stack as the tree is deep. UTS T3L is 17,844 levels deep, which overflows both
// libraries' default stacks (oneTBB's workers: 4 MiB; libgomp's threads and the harness thread:
// RLIMIT_STACK, 8 MiB). libfork's oneTBB port gives TBB's threads 128 MiB for UTS; BOTS sets
// OMP_STACKSIZE. Here every thread those two backends run tasks on gets --thread-stack: their
// workers, and a root thread of the scheduler's own that starts each run (the harness thread's
// stack cannot be chosen).
//
// A thread stack is mapped at its full size but commits only the pages a task touches, so a
// large default costs address space, not memory.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

namespace schedlab {

// --thread-stack's default: room for UTS T3L, the deepest tree a workload here declares. Its
// deepest thread touched 18.5 MiB under tbb and 16.1 MiB under openmp, at 1 and 2 threads (about
// 1 KiB per level; release build, scripts/stack-depth; docs/workloads.md, "The field's benchmarks"); twice
// that, rounded up to a power of two, leaves room for larger frames (a debug build's are 1.4x:
// T3 touched 2.3 MiB under tbb, 1.9 MiB under openmp, against 1.6 and 1.4 in release).
inline constexpr std::size_t kDefaultThreadStackBytes = std::size_t{64} << 20;
// The least --thread-stack: the libraries' own frames (a TBB dispatch loop, libgomp's team
// start) and the overflow report's margin need some 100 KiB.
inline constexpr std::size_t kMinThreadStackBytes = std::size_t{256} << 10;

// A stack size as --thread-stack spells it, for messages: "64M", "512K", else bytes.
std::string stack_size_word(std::size_t bytes);

// A joinable thread running `body` on a stack of `bytes` (std::thread cannot choose one).
class SizedThread {
 public:
  // Throws ResourceError (worker_thread_refused, naming `which`) when the thread cannot start.
  SizedThread(std::size_t bytes, std::function<void()> body, const char* which);
  ~SizedThread();  // joins
  SizedThread(const SizedThread&) = delete;
  SizedThread& operator=(const SizedThread&) = delete;

 private:
  static void* main(void* self);
  std::function<void()> body_;
  pthread_t thread_{};
};

// While one lives, a thread created without a stack size of its own gets `bytes`
// (pthread_setattr_default_np): how libgomp's team threads get theirs, since libgomp 12 creates
// them with the process default unless OMP_STACKSIZE or GOMP_STACKSIZE was set when it loaded.
// Process-wide, so one at a time (the constructor waits for the previous one to go), and meant to
// be held only while such threads are created. Throws std::system_error if glibc refuses.
class DefaultThreadStack {
 public:
  explicit DefaultThreadStack(std::size_t bytes);
  ~DefaultThreadStack();
  DefaultThreadStack(const DefaultThreadStack&) = delete;
  DefaultThreadStack& operator=(const DefaultThreadStack&) = delete;

 private:
  std::unique_lock<std::mutex> lock_;
  std::size_t previous_ = 0;
};

}  // namespace schedlab
