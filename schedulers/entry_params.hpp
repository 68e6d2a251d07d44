// entry_params.hpp: what a component's entry (schedulers/X/entry.cpp, workloads/X/entry.cpp)
// uses to declare its parameters, so that parameters meaning the same thing are declared alike
// everywhere: the spec constructors, the command-line words of enum settings, and the parameter
// sets every fiber scheduler shares (stack, pinning, netpoll, latency).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "params.hpp"
#include "runtime/runtime.hpp"

namespace schedlab {

ParamSpec integer(std::string name, std::int64_t def, std::int64_t min, std::int64_t max, std::string help);
ParamSpec size(std::string name, std::string def, std::int64_t min, std::int64_t max, std::string help);
ParamSpec choice(std::string name, std::string def, std::vector<std::string> choices, std::string help);

// An integer or size parameter's resolved value as the unsigned count it is.
inline std::uint64_t param_u64(const ParamValues& p, const std::string& name) {
  return static_cast<std::uint64_t>(param_int(p, name));
}
// --tasks, the number of tasks a workload spawns: written to the CSV as task_count, because
// `tasks` is the column of tasks a run executed.
ParamSpec task_count_param(std::int64_t def, std::int64_t max, std::string help);

// A byte count as the command line spells it: with the largest binary suffix that divides it
// (65536: "64K"), so that `schedlab list` shows a config's default the way a user would type it.
std::string size_word(std::uint64_t bytes);

// The command-line words of a scheduler's enum or bool setting. One table per setting gives its
// choices, spells its config default and reads the chosen word back, so the three cannot
// disagree.
template <class Value>
struct Word {
  Value value;
  const char* word;
};
inline constexpr Word<bool> kOnOff[] = {{true, "on"}, {false, "off"}};
inline constexpr Word<LocalOrder> kLocalOrders[] = {{LocalOrder::lifo, "lifo"}, {LocalOrder::fifo, "fifo"}};
inline constexpr Word<bool> kPreemptModes[] = {{true, "safepoint"}, {false, "off"}};

template <class Value, std::size_t N>
ParamSpec choice(std::string name, const Word<Value> (&words)[N], Value def, std::string help) {
  std::vector<std::string> choices;
  std::string def_word;
  for (const Word<Value>& w : words) {
    choices.emplace_back(w.word);
    if (w.value == def) def_word = w.word;
  }
  return choice(std::move(name), std::move(def_word), std::move(choices), std::move(help));
}

// The value of a choice parameter declared from `words` (resolve_params has checked the word).
template <class Value, std::size_t N>
Value chosen(const ParamValues& p, const std::string& name, const Word<Value> (&words)[N]) {
  const std::string& text = param_str(p, name);
  for (const Word<Value>& w : words) {
    if (text == w.word) return w.value;
  }
  throw std::logic_error("--" + name + " " + text + " was accepted but has no value");
}

// The stack parameters: every fiber scheduler's (StackConfig) and os-threads' (its pthreads).
std::vector<ParamSpec> stack_params(std::size_t default_size, bool default_guard);
// --pin, every scheduler's that runs tasks on threads of its own (go-runtime's Go program has no
// per-thread binding). One spec, so that the name, choices and meaning agree everywhere; only the
// default differs (cpu_pin.hpp: kPinByDefault; os-threads: on, os_threads.cpp).
ParamSpec pin_param(bool def);
// --thread-stack, the peers' whose waits nest tasks on their threads' own stacks (tbb, openmp:
// thread_stack.hpp).
ParamSpec thread_stack_param();
// --latency, every scheduler's that can record its tasks' scheduling delay (the fiber runtime's
// schedulers; go-runtime, which reads Go's own histogram). One spec, so that the name and
// meaning agree everywhere. A machine-setup parameter: instrumentation, not a design.
ParamSpec latency_param(bool def);
// stack_params and --pin: every scheduler on the fiber runtime's stacks (boost-fiber too).
std::vector<ParamSpec> fiber_params();
// The fiber runtime's own schedulers (a Policy under PolicyRuntime): fiber_params, --netpoll and
// --preempt.
std::vector<ParamSpec> runtime_params();
// The RuntimeConfig that runtime_params (or fiber_params) resolved to.
RuntimeConfig runtime_config(unsigned threads, const ParamValues& p);

}  // namespace schedlab
