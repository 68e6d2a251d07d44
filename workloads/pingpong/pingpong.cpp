// pingpong: the seeds' switch comparison and Go's BenchmarkPingPongHog.
//
// Each pair is two tasks and two unbuffered channels. The pinger sends a token on `ping` and
// waits for it on `pong`; the ponger waits on `ping`, adds one and sends it back on `pong`:
// a round trip is two hand-offs, each a park of one task and a ready of the other. Under a
// fiber scheduler a hand-off is a user-space switch (steal-half readies the partner into the
// sender's processor's runnext: Go's ready(), so the pair runs back to back on one processor);
// under os-threads each task is a thread and each hand-off wakes one thread in the kernel and
// puts the other to sleep: two context switches per round trip, the seeds' comparison of a
// goroutine switch with a thread switch. --threads 1 puts both threads of a pair on one CPU.
//
// --hog N adds N tasks that spin (workloads/spin.hpp, which has safe points) and never wait,
// until every pair has finished or --hog-iters increments, whichever comes first. Go's
// BenchmarkPingPongHog runs one hog beside one pair on one P: with runnext and inheritTime the
// pair keeps the P for a whole time slice, and sysmon's preemption (10 ms) lets the hog run a
// slice in between. With --preempt off a hog that gets a processor keeps it until it ends
// (the bound), and a pair queued behind it waits for that.
//
// Checked: every pair's token comes back 2 x rounds (each hand-off added one exactly once,
// in order), and every hog spun at most --hog-iters. The root spawns the hogs first, then each
// pair's ponger and pinger, into one wait group.
#include "pingpong.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "api.hpp"
#include "spin.hpp"

namespace schedlab {
namespace {

// A hog looks at the pairs' progress between spins of this many increments (each spin has a
// safe point every kSafepointEvery increments).
constexpr std::uint64_t kHogChunk = 4096;

class PingPongWorkload final : public Workload {
 public:
  explicit PingPongWorkload(PingPongParams p) : params_(p) {}

  void run() override {
    tokens_.assign(params_.pairs, 0);
    hog_spun_.assign(params_.hog, 0);
    std::atomic<std::uint64_t> pairs_done{0};
    struct Pair {
      Channel<std::uint64_t> ping, pong;
      explicit Pair(std::uint64_t i)
          : ping(0, "pair " + std::to_string(i) + " ping"), pong(0, "pair " + std::to_string(i) + " pong") {}
    };
    std::vector<Pair> pairs;
    pairs.reserve(params_.pairs);  // the tasks hold references: no reallocation once they run
    for (std::uint64_t i = 0; i < params_.pairs; ++i) pairs.emplace_back(i);

    WaitGroup wg;
    for (std::uint64_t h = 0; h < params_.hog; ++h) {
      wg.go([this, h, &pairs_done] {
        std::uint64_t spun = 0;
        do {
          spun += count_up(std::min(kHogChunk, params_.hog_iters - spun));
        } while (spun < params_.hog_iters && pairs_done.load(std::memory_order_relaxed) < params_.pairs);
        hog_spun_[h] = spun;
      });
    }
    for (std::uint64_t i = 0; i < params_.pairs; ++i) {
      Pair& pair = pairs[i];
      wg.go([&pair, rounds = params_.rounds] {
        for (std::uint64_t r = 0; r < rounds; ++r) pair.pong.send(*pair.ping.recv() + 1);
      });
      wg.go([this, &pair, i, &pairs_done, rounds = params_.rounds] {
        std::uint64_t token = 0;
        for (std::uint64_t r = 0; r < rounds; ++r) {
          pair.ping.send(token + 1);
          token = *pair.pong.recv();
        }
        tokens_[i] = token;
        pairs_done.fetch_add(1, std::memory_order_relaxed);
      });
    }
    wg.wait();
  }

  // Tasks that wait for each other's sends have no sequential program: the elision is refused
  // this workload before it runs (SchedulerEntry::cannot_wait).
  void run_elision() override {
    throw std::logic_error("pingpong has no sequential elision: its tasks wait for each other's sends");
  }

  std::string check() override {
    for (std::uint64_t i = 0; i < params_.pairs; ++i) {
      if (tokens_[i] != 2 * params_.rounds) {
        return "pingpong pair " + std::to_string(i) + "'s token came back as " + std::to_string(tokens_[i]) +
               " after " + std::to_string(params_.rounds) + " round trips, expected " +
               std::to_string(2 * params_.rounds) + ": a hand-off was lost or repeated";
      }
    }
    for (std::uint64_t h = 0; h < params_.hog; ++h) {
      if (hog_spun_[h] == 0 || hog_spun_[h] > params_.hog_iters) {
        return "pingpong hog " + std::to_string(h) + " spun " + std::to_string(hog_spun_[h]) +
               " increments, expected 1 to --hog-iters " + std::to_string(params_.hog_iters);
      }
    }
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override { return 2 * params_.pairs + params_.hog; }

 private:
  const PingPongParams params_;
  std::vector<std::uint64_t> tokens_;    // per pair, written by its pinger
  std::vector<std::uint64_t> hog_spun_;  // per hog
};

}  // namespace

std::unique_ptr<Workload> make_pingpong(PingPongParams p) {
  if (p.pairs == 0) throw std::invalid_argument("pingpong --pairs 0: use at least one pair");
  if (p.hog > 0 && p.hog_iters == 0) throw std::invalid_argument("pingpong --hog-iters 0 with --hog: a hog spins at least once; use --hog-iters 1 or more");
  return std::make_unique<PingPongWorkload>(p);
}

}  // namespace schedlab
