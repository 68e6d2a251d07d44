#include "entry_params.hpp"

#include "thread_stack.hpp"

namespace schedlab {

ParamSpec integer(std::string name, std::int64_t def, std::int64_t min, std::int64_t max, std::string help) {
  return ParamSpec{std::move(name), ParamKind::integer, std::to_string(def), std::move(help), min, max, {}};
}
ParamSpec size(std::string name, std::string def, std::int64_t min, std::int64_t max, std::string help) {
  return ParamSpec{std::move(name), ParamKind::size, std::move(def), std::move(help), min, max, {}};
}
ParamSpec choice(std::string name, std::string def, std::vector<std::string> choices, std::string help) {
  return ParamSpec{std::move(name), ParamKind::choice, std::move(def), std::move(help), 0, 0, std::move(choices)};
}

ParamSpec task_count_param(std::int64_t def, std::int64_t max, std::string help) {
  ParamSpec s = integer("tasks", def, 1, max, std::move(help));
  s.csv_column = "task_count";
  return s;
}

std::string size_word(std::uint64_t bytes) {
  for (const auto& [shift, suffix] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}}) {
    const std::uint64_t unit = std::uint64_t{1} << shift;
    if (bytes != 0 && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

std::vector<ParamSpec> stack_params(std::size_t default_size, bool default_guard) {
  return {size("stack-size", size_word(default_size), 16 * 1024, std::int64_t{1} << 30,
               "usable bytes per fiber stack (a task that recurses deeply needs more)"),
          choice("stack-guard", kOnOff, default_guard,
                 "a PROT_NONE guard page below each stack, while vm.max_map_count allows")};
}

ParamSpec pin_param(bool def) {
  ParamSpec p = choice("pin", kOnOff, def,
                       "on: worker i runs only on the i-th CPU this process may use, wrapping around past the last "
                       "(os-threads: every task thread on the first --threads CPUs); off: the kernel places the threads");
  p.machine_setup = true;
  return p;
}

ParamSpec thread_stack_param() {
  return size("thread-stack", size_word(kDefaultThreadStackBytes), static_cast<std::int64_t>(kMinThreadStackBytes),
              std::int64_t{1} << 32,
              "stack of every thread that runs tasks (a wait runs tasks nested on the waiting thread's stack, so a "
              "deep tree needs a deep stack: UTS T3L's 17,844 levels want tens of MiB); mapped whole, committed as "
              "touched");
}

std::vector<ParamSpec> fiber_params() {
  std::vector<ParamSpec> params = stack_params(StackConfig{}.size, StackConfig{}.guard);
  params.push_back(pin_param(RuntimeConfig{}.pin));
  return params;
}

std::vector<ParamSpec> runtime_params() {
  std::vector<ParamSpec> params = fiber_params();
  params.push_back(choice("netpoll", kOnOff, RuntimeConfig{}.netpoll,
                          "a task waiting for a socket parks on the runtime's epoll poller and its worker runs other "
                          "tasks (steal-half: the workers poll, as Go's; fair, central: a poller thread); off: it waits "
                          "in poll(2) inside blocking(), holding its thread (steal-half hands the processor on)"));
  params.push_back(choice("preempt", kPreemptModes, RuntimeConfig{}.preempt,
                          "a task that has held its processor for 10 ms (Go's forcePreemptNS) yields at its next safe "
                          "point, a loop's or a channel or mutex operation's (Go before 1.14: no signal-based "
                          "preemption), to the back of the queue; off: a task runs until it waits, yields or ends"));
  params.push_back(latency_param(RuntimeConfig{}.latency));
  return params;
}

ParamSpec latency_param(bool def) {
  ParamSpec p = choice("latency", kOnOff, def,
                       "record each task's scheduling delay (from becoming runnable to running) into the delay_* "
                       "columns and the run's latency file; go-runtime: read Go's own /sched/latencies:seconds");
  p.machine_setup = true;  // instrumentation: the claims compare designs whatever it is, where all agree
  return p;
}

RuntimeConfig runtime_config(unsigned threads, const ParamValues& p) {
  RuntimeConfig c;
  c.threads = threads;
  c.stack.size = static_cast<std::size_t>(param_int(p, "stack-size"));
  c.stack.guard = chosen(p, "stack-guard", kOnOff);
  c.pin = chosen(p, "pin", kOnOff);
  if (p.count("netpoll") != 0) c.netpoll = chosen(p, "netpoll", kOnOff);  // boost-fiber has no poller
  if (p.count("preempt") != 0) c.preempt = chosen(p, "preempt", kPreemptModes);  // nor preemption
  if (p.count("latency") != 0) c.latency = chosen(p, "latency", kOnOff);
  return c;
}

}  // namespace schedlab
