// conformance.hpp: checks that a policy keeps the contract of policy.hpp ("The contract"), by
// comparing what it counted with what the runtime observed.
//
// The runtime counts what passes through it whatever the policy does: tasks spawned (the roots
// included), run, and suspended (each suspension ends in exactly one submit_ready), so that
// spawned + suspensions is the number of tasks handed to the policy, and as many must come back
// out of next(). The policy counts its queue operations: pushes, pops, steals. And the kernel
// knows when a worker's thread sleeps, which the runtime must then see as parked. A policy that
// skips a duty of the contract shows up here, named in the message; the conformance test
// (tests/policy_conformance_test.cpp) runs every registered policy through both checks, and a
// deliberately broken one to show each check can fail.
#pragma once

#include <chrono>
#include <string>

#include "../counters.hpp"

namespace schedlab {

class FiberRuntime;

// What the counters of a runtime that has finished its runs (no task in flight) say a policy
// skipped, one sentence per problem joined by "; ", or "" when they agree. `c`: counters since
// the runtime was built (FiberRuntime::counters()), not a difference, since a worker's sleep
// may begin in one run and its wake-up come in the next.
std::string policy_counter_problems(const CounterSet& c);

// Waits (up to `patience`) until every worker thread of `runtime`, idle after its runs, sleeps
// in the kernel, and returns "" if the runtime then sees each of them parked, else which worker
// sleeps unaccounted and what that breaks. Only while no run is in progress.
std::string policy_idle_problems(FiberRuntime& runtime, std::chrono::milliseconds patience);

}  // namespace schedlab
