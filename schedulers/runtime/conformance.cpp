#include "conformance.hpp"

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "runtime.hpp"

namespace schedlab {
namespace {

void add(std::string& out, const std::string& problem) { out += (out.empty() ? "" : "; ") + problem; }

std::string n(std::uint64_t v) { return std::to_string(v); }

// The scheduling state of thread `tid` of this process ('R' running, 'S' sleeping, ...), or 0
// when it cannot be read (proc(5): the field after the command's closing parenthesis).
char kernel_state(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? 0 : line[close + 2];
}

}  // namespace

std::string policy_counter_problems(const CounterSet& c) {
  std::string out;
  const std::uint64_t spawned = c[Counter::tasks_spawned];
  const std::uint64_t handed = spawned + c[Counter::suspensions];
  // Tasks a poller readied that the policy ran at once, without a queue (steal-half's netpoll,
  // as Go's findRunnable runs the first): neither pushed nor popped.
  const std::uint64_t direct = c[Counter::netpoll_readied];
  if (c[Counter::tasks_executed] != spawned) {
    add(out, "tasks: " + n(spawned) + " spawned (roots included) but " + n(c[Counter::tasks_executed]) +
                 " ran: the policy lost a task or returned one twice from next()");
  }
  const std::uint64_t pushes = c[Counter::local_pushes] + c[Counter::global_pushes];
  if (pushes + direct < handed) {
    add(out, "pushes: " + n(handed) + " tasks were handed to the policy (spawned, roots included, and resumed) but it "
                 "counted " + n(pushes) + " pushes: count each submission with count_push(from, ...), the root's "
                 "(from == nullptr) too");
  } else if (c[Counter::overflows] == 0 && direct == 0 && pushes != handed) {
    add(out, "pushes: " + n(pushes) + " counted for " + n(handed) +
                 " tasks handed to the policy, none moved by an overflow: one push per submission");
  }
  const std::uint64_t pops = c[Counter::local_pops] + c[Counter::global_pops] + c[Counter::tasks_stolen];
  if (pops + direct < handed) {
    add(out, "pops: next() returned " + n(handed) + " tasks but the policy counted " + n(pops) +
                 " pops (local_pops, global_pops, tasks_stolen): count each task it takes");
  }
  // Every task parked on a channel or mutex was readied exactly once (by a send, a receive, a
  // close, an unlock, or the deadlock watch): the policy has it back once as submit_woken.
  if (c[Counter::chan_parks] != c[Counter::chan_readies] || c[Counter::lock_parks] != c[Counter::lock_readies]) {
    add(out, "parks: " + n(c[Counter::chan_parks]) + " tasks parked on channels and " + n(c[Counter::lock_parks]) +
                 " on mutexes, but " + n(c[Counter::chan_readies]) + " and " + n(c[Counter::lock_readies]) +
                 " readied: a parked task was lost or readied twice");
  }
  if (c[Counter::ready_runnext] > c[Counter::chan_readies] + c[Counter::lock_readies] ||
      c[Counter::ready_runnext_stolen] > c[Counter::ready_runnext]) {
    add(out, "runnext: " + n(c[Counter::ready_runnext]) + " readies into runnext (" +
                 n(c[Counter::ready_runnext_stolen]) + " of them stolen) for " +
                 n(c[Counter::chan_readies] + c[Counter::lock_readies]) + " readies: counted where nothing was readied");
  }
  const std::uint64_t gave_up = c[Counter::chan_parks] + c[Counter::lock_parks] + c[Counter::yields] + c[Counter::preemptions];
  if (c[Counter::suspensions] < gave_up) {
    add(out, "suspensions: " + n(c[Counter::suspensions]) + " counted for " + n(gave_up) +
                 " parks, yields and preemptions, each of which suspends its task");
  }
  // (No check of unparks against parks: a policy that notifies whenever it counts sleepers may
  // wake one sleeper twice before it runs; policy_idle_problems asks the kernel instead.)
  if (c[Counter::parks] > 0 && c[Counter::idle_ns] == 0) {
    add(out, "idle_ns: " + n(c[Counter::parks]) + " parks but no idle time: idle_begin without idle_end");
  }
  return out;
}

std::string policy_idle_problems(FiberRuntime& runtime, std::chrono::milliseconds patience) {
  // A thread blocked on a mutex for a moment also shows 'S': a worker counts as sleeping
  // unaccounted only when the kernel shows every worker asleep and this one unparked, this many
  // looks in a row (1 ms apart), while a parked worker needs one.
  constexpr int kLooksInARow = 50;
  const auto deadline = std::chrono::steady_clock::now() + patience;
  int unaccounted_looks = 0;
  FiberRuntime& rt = runtime;
  while (std::chrono::steady_clock::now() < deadline) {
    bool all_asleep = true;
    std::string unparked;
    for (unsigned i = 0; i < rt.worker_count(); ++i) {
      const Worker& w = rt.worker(i);
      if (kernel_state(w.tid()) != 'S') {
        all_asleep = false;
        break;
      }
      if (!w.parked()) unparked += (unparked.empty() ? "" : ", ") + std::to_string(i);
    }
    if (all_asleep && unparked.empty()) return "";
    if (all_asleep && ++unaccounted_looks >= kLooksInARow) {
      return "idle: worker " + unparked + " sleeps in the kernel but the runtime sees it awake: the policy sleeps "
             "without Worker::sleep_on or park (idle_begin/idle_end), so parks, idle_ns, the live-task gauge and the "
             "deadlock watch miss the sleep";
    }
    if (!all_asleep) unaccounted_looks = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return "idle: the workers did not all sleep within " + std::to_string(patience.count()) +
         " ms of the last run: a policy's worker that finds nothing sleeps (Worker::sleep_on or park), it does not "
         "spin on";
}

}  // namespace schedlab
