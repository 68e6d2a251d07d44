// lockmix: --tasks tasks, each making --ops updates of shared state under one mutex, with
// --between increments of its own work before each and --hold increments inside it.
//
// The contention is the share of a task's time spent holding the mutex, hold / (hold +
// between): with more tasks running at once than 1 / that share, they queue for the mutex, and
// a task that finds it locked spins a little and parks (sync/go_mutex.hpp: Go's sync.Mutex;
// boost-fiber: Boost.Fiber's mutex; os-threads: a thread asleep on a condition variable). The
// update reads the state, works (--hold), then writes it back: two tasks inside at once would
// lose one's update, so the final state checks mutual exclusion as well as the count.
//
// Written once over the execution type: the sequential elision runs the same updates with no
// mutex at all (one task at a time), the T_S of its speedup. Checked: the state counted
// tasks x ops updates, and summed every update's number (0 .. tasks x ops - 1) exactly once.
// Tasks: --tasks.
#include "lockmix.hpp"

#include <stdexcept>
#include <string>

#include "api.hpp"
#include "spin.hpp"

namespace schedlab {
namespace {

class LockmixWorkload final : public ElidableWorkload<LockmixWorkload> {
 public:
  explicit LockmixWorkload(LockmixParams p) : params_(p) {}

  template <class X>
  void body() {
    count_ = 0;
    sum_ = 0;
    work_ = 0;
    typename X::Mutex mutex("lockmix state");
    typename X::WaitGroup wg;
    for (std::uint64_t t = 0; t < params_.tasks; ++t) {
      wg.go([this, t, &mutex] {
        std::uint64_t own = 0;
        for (std::uint64_t op = 0; op < params_.ops; ++op) {
          own += count_up(params_.between);
          mutex.lock();
          // Read, work, write back: an update another task made in between would be lost.
          const std::uint64_t count = count_, sum = sum_;
          const std::uint64_t held = count_up(params_.hold);
          count_ = count + 1;
          sum_ = sum + t * params_.ops + op;
          work_ += held;
          mutex.unlock();
        }
        std::lock_guard lock(mutex);
        work_ += own;
      });
    }
    wg.wait();
  }

  std::string check() override {
    const std::uint64_t n = params_.tasks * params_.ops;
    const std::uint64_t want_sum = n == 0 ? 0 : n % 2 == 0 ? n / 2 * (n - 1) : (n - 1) / 2 * n;
    const std::uint64_t want_work = n * (params_.hold + params_.between);
    if (count_ != n || sum_ != want_sum || work_ != want_work) {
      return "lockmix: the state counted " + std::to_string(count_) + " updates summing to " + std::to_string(sum_) +
             " (work " + std::to_string(work_) + "), expected " + std::to_string(n) + " summing to " +
             std::to_string(want_sum) + " (work " + std::to_string(want_work) +
             "): an update was lost or made twice, or two tasks held the mutex at once";
    }
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override { return params_.tasks; }

 private:
  const LockmixParams params_;
  // The shared state, guarded by the run's mutex.
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t work_ = 0;  // every increment made, inside and outside, added under the mutex
};

}  // namespace

std::unique_ptr<Workload> make_lockmix(LockmixParams p) { return std::make_unique<LockmixWorkload>(p); }

}  // namespace schedlab
