// openmp: GCC's libgomp running the same workloads (see openmp.cpp).
#pragma once

#include <memory>
#include <string>

#include "../scheduler.hpp"
#include "../thread_stack.hpp"

namespace schedlab {

// `pin`: team thread i on the i-th allowed CPU (cpu_pin.hpp), for as long as the scheduler lives.
// `thread_stack`: the stack of every thread that runs tasks (thread_stack.hpp). Throws
// std::invalid_argument where openmp_thread_stack_conflict() says why it cannot apply.
std::unique_ptr<Scheduler> make_openmp(unsigned threads, bool pin,
                                       std::size_t thread_stack = kDefaultThreadStackBytes);
// Why --thread-stack cannot apply in this process (OMP_STACKSIZE or GOMP_STACKSIZE is set), as
// one line naming the fix; empty if it can.
std::string openmp_thread_stack_conflict();

}  // namespace schedlab
