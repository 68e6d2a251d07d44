// wakeup: Go's BenchmarkWakeupParallel (runtime/proc_test.go, benchWakeupParallel), the shape
// the spinning claim is judged on: a goroutine readied while another processor is idle.
//
// Two tasks, two unbuffered channels, --rounds turns. In each turn the first task spins
// --delay-us + --wake-delay-us and sends on `ping`, then spins --delay-us and receives on `pong`;
// the second spins --delay-us and receives on `ping`, then spins --delay-us + --wake-delay-us and
// sends on `pong`. So each receiver parks about --wake-delay-us before its sender sends (Go: "the
// addition of wakeDelay improves the probability that the receiver will be blocking when the send
// occurs"), and the send readies it while the sender goes on spinning --delay-us: the readied task
// waits for a processor. At 2 threads the other processor is idle then, its thread spinning or
// asleep: how long the readied task waits (the scheduling delay, --latency on) is what spinning
// threads are for. Under steal-half the readied task goes to the sender's runnext (Go's ready()),
// which a thief may take only after a grace (Go's runqgrab: usleep(3)); --runnext off puts it in
// the sender's queue, where a thief takes it at once.
//
// A spin is a busy loop on the clock (Go's spin: `for nanotime() < end {}`), with a safe point per
// look. Checked: each receive gets the turn's value, in order, every turn.
#include "wakeup.hpp"

#include <atomic>
#include <stdexcept>
#include <string>

#include "api.hpp"
#include "stats.hpp"

namespace schedlab {
namespace {

// Go's spin(d): busy until d has passed.
void spin_for_us(std::uint64_t us) {
  const std::uint64_t end = now_ns() + us * 1000;
  while (now_ns() < end) safepoint();
}

class WakeupWorkload final : public Workload {
 public:
  explicit WakeupWorkload(WakeupParams p) : params_(p) {}

  void run() override {
    wrong_.store(0, std::memory_order_relaxed);
    received_.store(0, std::memory_order_relaxed);
    Channel<std::uint64_t> ping(0, "wakeup ping"), pong(0, "wakeup pong");
    const WakeupParams p = params_;
    WaitGroup wg;
    wg.go([this, &ping, &pong, p] {
      for (std::uint64_t r = 0; r < p.rounds; ++r) {
        spin_for_us(p.delay_us + p.wake_delay_us);  // sender
        ping.send(r);
        spin_for_us(p.delay_us);  // receiver
        note(pong.recv(), r);
      }
    });
    wg.go([this, &ping, &pong, p] {
      for (std::uint64_t r = 0; r < p.rounds; ++r) {
        spin_for_us(p.delay_us);  // receiver
        note(ping.recv(), r);
        spin_for_us(p.delay_us + p.wake_delay_us);  // sender
        pong.send(r);
      }
    });
    wg.wait();
  }

  // Tasks that wait for each other's sends have no sequential program (as pingpong's).
  void run_elision() override {
    throw std::logic_error("wakeup has no sequential elision: its tasks wait for each other's sends");
  }

  std::string check() override {
    if (wrong_.load() != 0) {
      return "wakeup: " + std::to_string(wrong_.load()) + " receives got another turn's value or none";
    }
    if (received_.load() != 2 * params_.rounds) {
      return "wakeup received " + std::to_string(received_.load()) + " values, expected " +
             std::to_string(2 * params_.rounds);
    }
    return {};
  }

  std::optional<std::uint64_t> expected_tasks() const override { return 2; }

 private:
  void note(const std::optional<std::uint64_t>& got, std::uint64_t turn) {
    if (!got || *got != turn) wrong_.fetch_add(1, std::memory_order_relaxed);
    received_.fetch_add(1, std::memory_order_relaxed);
  }

  const WakeupParams params_;
  std::atomic<std::uint64_t> wrong_{0};
  std::atomic<std::uint64_t> received_{0};
};

}  // namespace

std::unique_ptr<Workload> make_wakeup(WakeupParams p) {
  if (p.rounds == 0) throw std::invalid_argument("wakeup --rounds 0: use at least one turn");
  return std::make_unique<WakeupWorkload>(p);
}

}  // namespace schedlab
