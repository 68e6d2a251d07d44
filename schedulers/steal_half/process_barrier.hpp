// process_barrier.hpp: the asymmetric store-load barrier steal-half's rare paths pay for its
// frequent ones.
//
// Two of steal-half's protocols are a store followed by a load on each of two sides, where at
// least one side must see the other's store (Dekker's pattern):
//   - spinning (steal_half.cpp): a submitter pushes and then reads nmspinning; a spinner that
//     gives up decrements nmspinning and then looks at the queues;
//   - runnext (runnext.hpp): the owner writes runnext and then reads the thieves' flag; a thief
//     raises the flag and then takes runnext.
// A store-load pair needs a full barrier on both sides (an XCHG or MFENCE on x86-64, ~20 cycles
// each). Here the frequent side (every push, every runnext operation: once or twice per task)
// keeps a compiler fence only, and the rare side (a spinner giving up, a thief taking runnext)
// calls process_barrier(): membarrier(2) makes every running thread of
// the process execute a full barrier at some point between the call's start and its return, and
// a thread that is not running passed one at its last context switch. Then: if that barrier
// point falls after the frequent side's store, the store is visible before the call returns and
// the rare side's load sees it; if it falls before the store, the frequent side's load, later in
// its program order, sees the rare side's store, made before the call. So at least one side sees
// the other, which is all two barriers give. (The argument of membarrier(2)'s man page; the
// frequent side's compiler fence keeps its load after its store in program order.)
//
// Where the kernel refuses membarrier (before Linux 4.14, or under a seccomp filter), each
// frequent side uses a full barrier of its own instead (`fenced`): Go's cost.
#pragma once

namespace schedlab {

// Registers the process for expedited private membarrier once; false where the kernel does not
// offer it (then callers must fence their frequent side).
bool process_barrier_available();

// A full memory barrier on every running thread of this process (membarrier(2)). Only after
// process_barrier_available() returned true. Costs an inter-processor interrupt to each CPU
// running one of the process's threads: microseconds, for rare paths only.
void process_barrier();

}  // namespace schedlab
