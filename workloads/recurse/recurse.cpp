// recurse: the root spawns --tasks tasks and joins them; each recurses --depth calls deep, every
// call holding a frame of kRecurseFrameBytes, and returns a checksum of its frames.
//
// It measures nothing of interest: it is how a user meets a stack limit on purpose. No other
// workload recurses deeply enough within its parameters to overflow even a 16 KiB fiber stack;
// here a --depth past --stack-size / 256 runs a fiber stack into its guard page, and the user sees
// the overflow report (the case, the --stack-size that fixes it, the sidecar marked failed) end
// to end. Under the other backends it meets a thread's own stack (tbb's and openmp's threads,
// --thread-stack; an os-threads task thread, --stack-size; under serial and the elision, the
// harness thread's, ulimit -s) or a Boost.Fiber fiber's, each reported the same way.
#include "recurse.hpp"

#include <string>
#include <vector>

#include "api.hpp"

namespace schedlab {
namespace {

// Not inlined, and its frame used after the call returns, so that every level keeps a frame of
// kRecurseFrameBytes: both ends of it are written (the low end first meets a guard page).
[[gnu::noinline]] std::uint64_t descend(std::uint64_t depth) {
  volatile unsigned char frame[kRecurseFrameBytes];
  frame[0] = static_cast<unsigned char>(depth);
  frame[kRecurseFrameBytes - 1] = 1;
  const std::uint64_t below = depth == 0 ? 0 : descend(depth - 1);
  return below + frame[0] + frame[kRecurseFrameBytes - 1];
}

// What descend(depth) returns, without recursing.
std::uint64_t expected_sum(std::uint64_t depth) {
  std::uint64_t sum = 0;
  for (std::uint64_t d = 0; d <= depth; ++d) sum += (d & 0xff) + 1;
  return sum;
}

class RecurseWorkload final : public ElidableWorkload<RecurseWorkload> {
 public:
  explicit RecurseWorkload(RecurseParams p) : params_(p) {}

  template <class X>
  void body() {
    const auto recursion = [depth = params_.depth] { return descend(depth); };
    std::vector<decltype(X::spawn(recursion))> tasks;
    tasks.reserve(params_.tasks);
    for (std::uint64_t i = 0; i < params_.tasks; ++i) tasks.push_back(X::spawn(recursion));
    sums_.clear();
    for (auto& t : tasks) sums_.push_back(t.join());
  }
  std::string check() override {
    const std::uint64_t want = expected_sum(params_.depth);
    for (std::uint64_t sum : sums_) {
      if (sum != want) return "a task's recursion returned " + std::to_string(sum) + ", expected " + std::to_string(want);
    }
    return sums_.size() == params_.tasks ? "" : "only " + std::to_string(sums_.size()) + " tasks returned";
  }
  std::optional<std::uint64_t> expected_tasks() const override { return params_.tasks; }

 private:
  const RecurseParams params_;
  std::vector<std::uint64_t> sums_;
};

}  // namespace

std::unique_ptr<Workload> make_recurse(RecurseParams params) { return std::make_unique<RecurseWorkload>(params); }

}  // namespace schedlab
