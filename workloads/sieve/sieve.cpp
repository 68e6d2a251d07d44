// sieve: Go's concurrent prime sieve (the "Prime numbers" program of the Go tour and of
// golang.org/doc/play/sieve.go), made to end.
//
// A generator task sends 2, 3, 4, ... into a channel. The root receives the first number, a
// prime p, starts a filter task that passes on from that channel to a new one every number p
// does not divide, and receives the next prime from the new channel, and so on: after k primes
// the numbers flow through a chain of k filters, each a task parked on its input most of the
// time, and every hand-off readies the next stage (steal-half: into the sender's runnext, so a
// number runs down the chain on one processor). Go's version runs for ever and leaves its
// goroutines behind; here the generator stops after the --primes-th prime p_n (known from a
// sequential sieve before the run) and closes its channel, and each filter closes its output
// when its input is closed, so the chain drains and every task ends.
//
// Checked: the root received exactly --primes primes, the last of them p_n, and nothing after
// it. Tasks: the generator and one filter per prime but the last.
#include "sieve.hpp"

#include <cmath>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "api.hpp"

namespace schedlab {
namespace {

class SieveWorkload final : public Workload {
 public:
  explicit SieveWorkload(SieveParams p) : params_(p), last_prime_(nth_prime(p.primes)) {}

  void run() override {
    found_ = 0;
    last_ = 0;
    after_ = 0;
    std::deque<Channel<std::uint64_t>> stages;  // stable addresses: the filters hold them
    stages.emplace_back(0, "sieve stage 0");
    WaitGroup wg;
    wg.go([&gen = stages.back(), limit = last_prime_] {
      for (std::uint64_t v = 2; v <= limit; ++v) gen.send(v);
      gen.close();
    });
    Channel<std::uint64_t>* in = &stages.back();
    for (std::uint64_t i = 0; i < params_.primes; ++i) {
      const std::optional<std::uint64_t> prime = in->recv();
      if (!prime) break;  // the chain ran dry early: check() says so
      ++found_;
      last_ = *prime;
      if (i + 1 == params_.primes) break;
      Channel<std::uint64_t>& out = stages.emplace_back(0, "sieve stage " + std::to_string(i + 1));
      wg.go([in, &out, p = *prime] {
        while (const std::optional<std::uint64_t> v = in->recv()) {
          if (*v % p != 0) out.send(*v);
        }
        out.close();
      });
      in = &out;
    }
    while (in->recv()) ++after_;  // the last stage closes once the generator's end comes through
    wg.wait();
  }

  // Tasks that wait for each other's sends have no sequential program: refused before the run.
  void run_elision() override {
    throw std::logic_error("sieve has no sequential elision: its tasks wait for each other's sends");
  }

  std::string check() override {
    if (found_ != params_.primes || last_ != last_prime_ || after_ != 0) {
      return "sieve found " + std::to_string(found_) + " primes, the last " + std::to_string(last_) + ", then " +
             std::to_string(after_) + " more numbers; expected " + std::to_string(params_.primes) +
             " primes, the last " + std::to_string(last_prime_) + ", then none";
    }
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override { return params_.primes; }

 private:
  const SieveParams params_;
  const std::uint64_t last_prime_;
  std::uint64_t found_ = 0;
  std::uint64_t last_ = 0;
  std::uint64_t after_ = 0;
};

}  // namespace

std::uint64_t nth_prime(std::uint64_t n) {
  if (n < 1 || n > kSieveMaxPrimes) throw std::invalid_argument("nth_prime: n out of range");
  // p_n < n (ln n + ln ln n) for n >= 6 (Rosser's theorem); 15 covers the smaller n.
  std::uint64_t limit = 15;
  if (n >= 6) {
    const double x = static_cast<double>(n);
    limit = static_cast<std::uint64_t>(x * (std::log(x) + std::log(std::log(x)))) + 1;
  }
  std::vector<bool> composite(limit + 1, false);
  std::uint64_t count = 0;
  for (std::uint64_t v = 2; v <= limit; ++v) {
    if (composite[v]) continue;
    if (++count == n) return v;
    for (std::uint64_t m = v * v; m <= limit; m += v) composite[m] = true;
  }
  throw std::logic_error("nth_prime: the bound was too small");  // Rosser's theorem says it is not
}

std::unique_ptr<Workload> make_sieve(SieveParams p) {
  if (p.primes < 1 || p.primes > kSieveMaxPrimes) {
    throw std::invalid_argument("sieve --primes " + std::to_string(p.primes) + ": use 1.." +
                                std::to_string(kSieveMaxPrimes));
  }
  return std::make_unique<SieveWorkload>(p);
}

}  // namespace schedlab
