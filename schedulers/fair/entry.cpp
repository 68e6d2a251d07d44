// fair's registry entry (scheduler_entry.hpp): its name, summary, parameters and factory.
#include "entry_params.hpp"
#include "fair/fair.hpp"
#include "scheduler_entry.hpp"

namespace schedlab {

std::vector<SchedulerEntry> scheduler_entries_fair() {
  SchedulerEntry e{"fair", "static fair split: each task bound round-robin to one processor, never moves", runtime_params(), {}};
  e.rank = 10;
  e.params.push_back(choice("local-order", kLocalOrders, FairConfig{}.order,
                            "which end of its own queue a processor runs first"));
  e.make = [](unsigned threads, const ParamValues& p) {
    FairConfig c;
    c.order = chosen(p, "local-order", kLocalOrders);
    return make_fair(runtime_config(threads, p), c);
  };
  return {e};
}

}  // namespace schedlab
