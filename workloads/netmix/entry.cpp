// netmix's registry entry (workload_entry.hpp).
#include "entry_params.hpp"
#include "netmix/netmix.hpp"
#include "workload_entry.hpp"

namespace schedlab {
namespace {
constexpr Word<NetmixLoad> kLoads[] = {{NetmixLoad::closed, "closed"}, {NetmixLoad::open, "open"}};
constexpr Word<Arrivals> kArrivals[] = {{Arrivals::fixed, "fixed"}, {Arrivals::poisson, "poisson"}};
}  // namespace

std::vector<WorkloadEntry> workload_entries_netmix() {
  const NetmixParams defaults;
  WorkloadEntry e{"netmix", "--conns connections over loopback TCP to an echo server of its own, each a task that "
                  "computes --iters increments and then waits for the reply to its request, --requests times: a "
                  "socket wait (the poller's under the fiber schedulers)",
                  {integer("conns", static_cast<std::int64_t>(defaults.conns), 1, 100000,
                           "connections, one task each, to the workload's echo server on 127.0.0.1"),
                   integer("requests", static_cast<std::int64_t>(defaults.requests), 1, 1000000000,
                           "requests per connection, each answered before the next"),
                   integer("iters", static_cast<std::int64_t>(defaults.iters), 0, std::int64_t{1} << 40,
                           "increments of CPU work before each request"),
                   integer("server-delay-us", static_cast<std::int64_t>(defaults.server_delay_us), 0, 1000000,
                           "the server holds each reply this many microseconds (a remote service's latency)"),
                   size("request-bytes", std::to_string(defaults.request_bytes), 1, 65536,
                        "bytes per request; the server echoes them"),
                   choice("load", kLoads, defaults.load,
                          "closed: each task is a client of the workload's echo server and waits for each reply "
                          "before its next request; open: the roles turn around (wrk2's open loop): a load "
                          "generator on a thread of its own sends --rate requests a second over the connections "
                          "and measures each from its intended send time, and each task is a server (read a "
                          "request, compute --iters, reply)"),
                   integer("rate", static_cast<std::int64_t>(defaults.rate), 1, 10000000,
                           "--load open: requests per second the generator sends, over all connections"),
                   choice("arrivals", kArrivals, defaults.arrivals,
                          "--load open: the generator's schedule, fixed spacing (wrk2's) or a Poisson process"),
                   integer("seed", static_cast<std::int64_t>(defaults.seed), 0, std::int64_t{1} << 62,
                           "--load open --arrivals poisson: the schedule's random seed")},
                  [](const ParamValues& p) {
                    NetmixParams n;
                    n.conns = param_u64(p, "conns");
                    n.requests = param_u64(p, "requests");
                    n.iters = param_u64(p, "iters");
                    n.server_delay_us = param_u64(p, "server-delay-us");
                    n.request_bytes = param_u64(p, "request-bytes");
                    n.load = chosen(p, "load", kLoads);
                    n.rate = param_u64(p, "rate");
                    n.arrivals = chosen(p, "arrivals", kArrivals);
                    n.seed = param_u64(p, "seed");
                    return make_netmix(n);
                  }};
  e.rank = 40;
  e.go_twin = true;
  e.measures_requests = [](const ParamValues& p) { return chosen(p, "load", kLoads) == NetmixLoad::open; };
  e.test_params = {{{"conns", "6"}, {"requests", "5"}, {"iters", "1000"}},
                   {{"conns", "3"}, {"requests", "4"}, {"iters", "100"}, {"server-delay-us", "300"}, {"request-bytes", "3000"}},
                   {{"load", "open"}, {"conns", "4"}, {"requests", "5"}, {"iters", "1000"}, {"rate", "20000"}},
                   {{"load", "open"}, {"conns", "3"}, {"requests", "4"}, {"iters", "100"}, {"rate", "5000"},
                    {"arrivals", "poisson"}, {"request-bytes", "3000"}}};
  return {e};
}

}  // namespace schedlab
