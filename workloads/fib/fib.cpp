// fib: recursive Fibonacci, the seeds' fork-join example.
//
// `fib-go` is the seed's Go program: each call is a goroutine that starts two goroutines for
// fib(n-1) and fib(n-2) and receives both results over channels. Here each call spawns two tasks
// and joins both handles (a handle carries the result as the channel did). Both children are
// spawned before either is joined, so a scheduler sees two runnable siblings at every level.
//
// `fib` is the Cilk shape: spawn fib(n-1), compute fib(n-2) in the caller, then join. Half the
// tasks, and the parent keeps working while its child waits, so it is the fairer measure of
// per-task overhead.
//
// The field's fib benchmarks are these two shapes: tzcnt/runtime-benchmarks' fib(39) is fib-go
// with --base 1 (both branches spawned with oneTBB's parallel_invoke, fib(n) = n below 2), and
// libfork's fib(40) (fork n-1, call n-2, n < 2 returns n) is `fib` itself.
//
// Neither shape has a cutoff by default: with tiny tasks the scheduler's own cost dominates,
// which is what the per-task figures are about. --cutoff makes leaves serial (granularity).
#include "fib.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "api.hpp"

namespace schedlab {

std::uint64_t fib_serial_go(int n) { return n <= 2 ? 1 : fib_serial_go(n - 1) + fib_serial_go(n - 2); }
std::uint64_t fib_serial_cilk(int n) {
  return n < 2 ? static_cast<std::uint64_t>(n) : fib_serial_cilk(n - 1) + fib_serial_cilk(n - 2);
}
std::uint64_t fib_serial_go(int n, int base) { return base == kFibSeedBase ? fib_serial_go(n) : fib_serial_cilk(n); }

namespace {

class FibWorkload final : public ElidableWorkload<FibWorkload> {
 public:
  FibWorkload(FibShape shape, FibParams params) : shape_(shape), params_(params) {}

  template <class X>
  void body() {
    result_ = shape_ == FibShape::go ? fib_go<X>(params_.n, params_.cutoff, params_.base)
                                     : fib_cilk<X>(params_.n, params_.cutoff);
  }
  std::string check() override {
    const std::uint64_t want = fib_reference(params_.n);
    if (result_ == want) return {};
    return "fib(" + std::to_string(params_.n) + ") returned " + std::to_string(result_) +
           ", expected " + std::to_string(want);
  }
  std::optional<std::uint64_t> expected_tasks() const override {
    return fib_tasks(shape_, params_.n, params_.cutoff, params_.base);
  }

 private:
  const FibShape shape_;
  const FibParams params_;
  std::uint64_t result_ = 0;
};

}  // namespace

std::uint64_t fib_reference(int n) {
  std::uint64_t a = 0, b = 1;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t c = a + b;
    a = b;
    b = c;
  }
  return a;
}

template <class X>
std::uint64_t fib_go(int n, int cutoff, int base) {
  if (n <= base || n <= cutoff) return fib_serial_go(n, base);
  auto a = X::spawn([n, cutoff, base] { return fib_go<X>(n - 1, cutoff, base); });
  auto b = X::spawn([n, cutoff, base] { return fib_go<X>(n - 2, cutoff, base); });
  return a.join() + b.join();
}

template <class X>
std::uint64_t fib_cilk(int n, int cutoff) {
  if (n < 2 || n <= cutoff) return fib_serial_cilk(n);
  auto a = X::spawn([n, cutoff] { return fib_cilk<X>(n - 1, cutoff); });
  const std::uint64_t b = fib_cilk<X>(n - 2, cutoff);
  return a.join() + b;
}

template std::uint64_t fib_go<Tasks>(int, int, int);
template std::uint64_t fib_go<Elision>(int, int, int);
template std::uint64_t fib_cilk<Tasks>(int, int);
template std::uint64_t fib_cilk<Elision>(int, int);

std::uint64_t fib_tasks(FibShape shape, int n, int cutoff, int base) {
  // tasks(m) = 0 at a serial leaf, else (spawns per call) + tasks(m-1) + tasks(m-2).
  std::vector<std::uint64_t> t(static_cast<std::size_t>(n < 2 ? 2 : n + 1), 0);
  for (int m = 0; m <= n; ++m) {
    const bool leaf = shape == FibShape::go ? (m <= base || m <= cutoff) : (m < 2 || m <= cutoff);
    if (leaf) {
      t[m] = 0;
    } else {
      t[m] = (shape == FibShape::go ? 2 : 1) + t[m - 1] + t[m - 2];
    }
  }
  return t[n];
}

std::unique_ptr<Workload> make_fib(FibShape shape, FibParams params) {
  if (params.base != 1 && params.base != kFibSeedBase) {
    throw std::invalid_argument("fib base " + std::to_string(params.base) +
                                " is not a base case: use 2 (fib(1) = fib(2) = 1, the seed's) or 1 (fib(n) = n below 2, tzcnt's)");
  }
  // fib-go with base 2 has no fib(0): its leaves start at 1.
  const int min_n = shape == FibShape::go && params.base == kFibSeedBase ? 1 : 0;
  if (params.n < min_n || params.n > kFibMaxN) {
    throw std::invalid_argument("fib n " + std::to_string(params.n) + " is out of range: use " +
                                std::to_string(min_n) + " <= n <= " + std::to_string(kFibMaxN));
  }
  if (params.cutoff < 0) {
    throw std::invalid_argument("fib cutoff " + std::to_string(params.cutoff) +
                                " is negative: use 0 (no cutoff) or a positive n");
  }
  return std::make_unique<FibWorkload>(shape, params);
}

}  // namespace schedlab
