// central's registry entry (scheduler_entry.hpp): its name, summary, parameters and factory.
#include "central/central.hpp"
#include "entry_params.hpp"
#include "scheduler_entry.hpp"

namespace schedlab {

std::vector<SchedulerEntry> scheduler_entries_central() {
  SchedulerEntry e{"central", "one queue behind one mutex (FIFO; --order lifo: a stack), idle workers on a condition variable", runtime_params(), {}};
  e.rank = 20;
  e.params.push_back(choice("order", kLocalOrders, CentralConfig{}.order,
                            "the queue's order: fifo (the seeds' central queue) or lifo (a stack, to separate order from centralisation)"));
  e.make = [](unsigned threads, const ParamValues& p) {
    CentralConfig c;
    c.order = chosen(p, "order", kLocalOrders);
    return make_central(runtime_config(threads, p), c);
  };
  return {e};
}

}  // namespace schedlab
