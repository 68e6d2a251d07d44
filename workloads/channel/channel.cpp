// channel: tzcnt/runtime-benchmarks' `channel` benchmark (cpp/*/channel.cpp): --values numbers
// pass through one buffered channel from --producers tasks to --consumers tasks.
//
// Producer i sends a contiguous range of the numbers 0 .. values-1 (the first values %
// producers producers one more than the others, as tzcnt's split); each consumer receives until
// the channel is closed and keeps a count and a sum. The root starts the consumers, then the
// producers, waits for the producers, closes the channel and waits for the consumers (tzcnt's
// TooManyCooks port drains the channel likewise). A full buffer parks a producer, an empty one
// a consumer: the channel's lock and its parks and readies are the work.
//
// Where it departs from tzcnt's: producers = consumers = threads / 2 there (at least 1: one
// each at 1 and 2 threads, the thread counts of this project's machine); here they are
// parameters, one each by default. Its ports use each library's own channel (TooManyCooks' is
// unbounded); here every backend runs Go's buffered channel, or Boost.Fiber's own, with
// --capacity. tzcnt's size is 10^7 values; the default here is 10^6.
//
// Checked: the consumers together received exactly --values numbers summing to
// values (values - 1) / 2. Tasks: producers + consumers.
#include "channel.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "api.hpp"

namespace schedlab {
namespace {

class ChannelWorkload final : public Workload {
 public:
  explicit ChannelWorkload(ChannelParams p) : params_(p) {}

  void run() override {
    counts_.assign(params_.consumers, 0);
    sums_.assign(params_.consumers, 0);
    Channel<std::uint64_t> chan(params_.capacity, "channel");
    WaitGroup consumers;
    for (std::uint64_t c = 0; c < params_.consumers; ++c) {
      consumers.go([this, c, &chan] {
        std::uint64_t count = 0, sum = 0;
        while (const std::optional<std::uint64_t> v = chan.recv()) {
          ++count;
          sum += *v;
        }
        counts_[c] = count;
        sums_[c] = sum;
      });
    }
    {
      WaitGroup producers;
      const std::uint64_t per = params_.values / params_.producers, rem = params_.values % params_.producers;
      std::uint64_t base = 0;
      for (std::uint64_t p = 0; p < params_.producers; ++p) {
        const std::uint64_t count = p < rem ? per + 1 : per;
        producers.go([&chan, base, count] {
          for (std::uint64_t i = 0; i < count; ++i) chan.send(base + i);
        });
        base += count;
      }
      producers.wait();
    }
    chan.close();
    consumers.wait();
  }

  // Tasks that wait for each other's sends have no sequential program: refused before the run.
  void run_elision() override {
    throw std::logic_error("channel has no sequential elision: its tasks wait for each other's sends");
  }

  std::string check() override {
    std::uint64_t count = 0, sum = 0;
    for (std::uint64_t c = 0; c < params_.consumers; ++c) {
      count += counts_[c];
      sum += sums_[c];
    }
    const std::uint64_t n = params_.values;
    // n (n - 1) / 2, halving the even factor first so that nothing overflows.
    const std::uint64_t want = n == 0 ? 0 : n % 2 == 0 ? n / 2 * (n - 1) : (n - 1) / 2 * n;
    if (count != n || sum != want) {
      return "channel: the consumers received " + std::to_string(count) + " values summing to " + std::to_string(sum) +
             ", expected " + std::to_string(n) + " summing to " + std::to_string(want);
    }
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override { return params_.producers + params_.consumers; }

 private:
  const ChannelParams params_;
  std::vector<std::uint64_t> counts_, sums_;  // per consumer
};

}  // namespace

std::unique_ptr<Workload> make_channel_workload(ChannelParams p) {
  if (p.producers == 0 || p.consumers == 0) {
    throw std::invalid_argument("channel --producers and --consumers must be at least 1");
  }
  return std::make_unique<ChannelWorkload>(p);
}

}  // namespace schedlab
