// fiber_guard.hpp: a fiber stack overflow becomes a one-line diagnosis, not memory corruption.
//
// Fiber stacks are small (64 KiB by default) and sit above a PROT_NONE guard page (stack.hpp).
// A task that recurses too deeply writes into the guard page and the kernel raises SIGSEGV on
// the worker thread, whose stack is the overflowed one, so the handler runs on a per-thread
// alternate signal stack. It checks that the faulting address is inside the guard page of the
// fiber the worker is running, prints which task (the harness's label of the case) and the
// --stack-size that fixes it, writes the sidecar the harness prepared (diagnostics.hpp), and
// exits with status 1. Any other SIGSEGV is a crash, or a signal another process sent: it is
// reported as such (diagnostics.hpp) and the process ends by it, with the default action.
//
// Stacks handed out after the guard-page budget is spent (stack.hpp) have no guard page; an
// overflow there is not caught. The run's counters say how many stacks were unguarded.
//
// This header is the runtime's half; the harness's half (what to call the task, what to leave
// on disk) is diagnostics.hpp, implemented in fiber_guard.cpp beside the handler that reads it.
#pragma once

namespace schedlab {

// Called by the fiber runtime only. Installs the process-wide SIGSEGV handler (idempotent,
// thread-safe).
void install_overflow_handler();
// Gives the calling thread an alternate signal stack; each worker thread calls it at start and
// release_overflow_stack() before it exits.
void arm_overflow_stack();
void release_overflow_stack();

}  // namespace schedlab
