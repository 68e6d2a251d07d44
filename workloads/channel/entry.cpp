// channel's registry entry (workload_entry.hpp).
#include "channel/channel.hpp"
#include "entry_params.hpp"
#include "workload_entry.hpp"

namespace schedlab {

std::vector<WorkloadEntry> workload_entries_channel() {
  const ChannelParams d;
  WorkloadEntry e{"channel", "tzcnt/runtime-benchmarks' channel benchmark: --values numbers through one buffered channel "
                  "from --producers to --consumers tasks",
                  {integer("values", static_cast<std::int64_t>(d.values), 0, std::int64_t{1} << 40,
                           "numbers sent through the channel (tzcnt's: 10^7)"),
                   integer("producers", static_cast<std::int64_t>(d.producers), 1, 100000,
                           "sending tasks (tzcnt's: threads/2, at least 1)"),
                   integer("consumers", static_cast<std::int64_t>(d.consumers), 1, 100000,
                           "receiving tasks (tzcnt's: threads/2, at least 1)"),
                   integer("capacity", static_cast<std::int64_t>(d.capacity), 0, 1 << 24,
                           "values the channel buffers (0: unbuffered; boost-fiber: rounded up to a power of two minus 1)")},
                  [](const ParamValues& p) {
                    return make_channel_workload(ChannelParams{param_u64(p, "values"), param_u64(p, "producers"),
                                                      param_u64(p, "consumers"), param_u64(p, "capacity")});
                  }};
  e.rank = 130;
  e.go_twin = true;
  e.waits = TaskWaits::channels;
  e.test_params = {{{"values", "5000"}, {"producers", "2"}, {"consumers", "3"}, {"capacity", "16"}},
                   {{"values", "500"}, {"capacity", "0"}}};
  e.gbench_defaults = {{"values", "100000"}};
  return {e};
}

}  // namespace schedlab
