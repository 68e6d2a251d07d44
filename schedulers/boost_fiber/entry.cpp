// The Boost.Fiber backends' registry entries (scheduler_entry.hpp); without Boost.Fiber in the
// build, the reason they are missing.
#include "entry_params.hpp"
#include "scheduler_entry.hpp"
#if SCHEDLAB_WITH_BOOST_FIBER
#include "boost_fiber/boost_fiber.hpp"
#endif

namespace schedlab {
namespace {

enum class Algorithm { work_stealing, shared_work };

// Boost.Fiber with one of its multi-thread algorithms, on the fiber runtime's stacks.
SchedulerEntry boost_fiber_entry(std::string name, [[maybe_unused]] Algorithm algorithm, std::string summary) {
  SchedulerEntry e{std::move(name), std::move(summary), fiber_params(), {}};
  e.rank = 50;
  e.peer = true;
  // Boost.Fiber's algorithms keep no counts of their own queues, switches or idle time
  // (boost_fiber.cpp); these are what the adapter sees.
  e.counters = counter_mask({Counter::tasks_spawned, Counter::tasks_executed, Counter::migrations,
                             Counter::suspensions, Counter::threads_created, Counter::stacks_allocated,
                             Counter::lock_parks, Counter::yields});
#if SCHEDLAB_WITH_BOOST_FIBER
  e.make = [algorithm](unsigned threads, const ParamValues& p) {
    BoostFiberConfig c;
    c.threads = threads;
    c.algorithm = algorithm == Algorithm::work_stealing ? BoostFiberAlgorithm::work_stealing
                                                        : BoostFiberAlgorithm::shared_work;
    const RuntimeConfig rc = runtime_config(threads, p);
    c.stack = rc.stack;
    c.pin = rc.pin;
    return make_boost_fiber(c);
  };
#else
  e.missing = "this build has no Boost.Fiber (SCHEDLAB_WITH_BOOST_FIBER=OFF)";
#endif
  return e;
}

}  // namespace

std::vector<SchedulerEntry> scheduler_entries_boost_fiber() {
  return {boost_fiber_entry("boost-fiber", Algorithm::work_stealing,
                            "Boost.Fiber's work_stealing: a fiber per task, a queue per thread, idle threads steal; fiber::join"),
          boost_fiber_entry("boost-fiber-shared", Algorithm::shared_work,
                            "Boost.Fiber's shared_work: a fiber per task, one queue behind one mutex for all threads")};
}

}  // namespace schedlab
