// cpu_pin: the one rule by which every backend binds its worker threads to CPUs (--pin on).
//
// Runtime benchmark suites pin worker i to CPU i so that the kernel does not move a worker
// between cores in the middle of a cache comparison: a migration would cost the worker its warm
// L1/L2 and credit the loss to the scheduler under test. The rule, for every backend:
//   - worker i of W runs on the i-th CPU this process may use (sched_getaffinity, in ascending
//     CPU order), wrapping around when W exceeds the allowed CPUs: worker C+i shares CPU i with
//     worker i (oversubscribed rows say so in their `oversubscribed` column);
//   - a thread that is none of the W workers but runs their tasks (steal-half's hand-off
//     threads, which take whichever processor is free; os-threads' task threads) may run on the
//     CPUs the workers hold, the first min(W, C) allowed ones.
// The allowed set is read when a scheduler is built; a later taskset does not move its workers.
#pragma once

#include <sched.h>

#include <climits>
#include <string>
#include <vector>

namespace schedlab {

// --pin's default for every backend with a pool of worker threads (fiber runtimes, tbb, serial):
// off, because that is how Go's runtime, oneTBB and most programs run (the kernel places the
// threads and moves them away from a CPU another process is busy on), go-runtime cannot be
// pinned per thread at all, and on a shared machine a pinned worker waits for its one CPU
// instead of moving. The presets that judge the claims pin (presets.json: their "params"),
// because the kernel's placement can leave a short repetition's two workers sharing one
// CPU throughout, at half speed with nothing flagged (docs/schedulers.md, Pinning, has the counts).
// os-threads, which has no pool, defaults to on (os_threads.cpp says why).
inline constexpr bool kPinByDefault = false;

// The CPUs this process may run on now, ascending; never empty (the calling CPU if the kernel
// refuses to say).
std::vector<int> allowed_cpus();

// Not one of the workers: pinned_cpus gives the workers' CPUs together, as it does to any
// `worker` at or past `workers` (a hand-off thread).
inline constexpr unsigned kAnyWorker = UINT_MAX;

// The CPUs the rule above gives thread `worker` (or kAnyWorker) of `workers`, out of `allowed`
// (non-empty, as allowed_cpus returns it).
cpu_set_t pinned_cpus(const std::vector<int>& allowed, unsigned worker, unsigned workers);

// Binds the calling thread to `cpus`; 0 or the errno of the refusal.
int pin_this_thread(const cpu_set_t& cpus);

// The one line for a pin the kernel refused with `err`: names `thread` ("worker thread 2"), the
// errno and the fix.
std::string pin_refused(const std::string& thread, int err);

// Binds the calling thread, worker `worker` of `workers` (or kAnyWorker), to its CPUs by the rule
// above, out of `allowed`. "" when done, else pin_refused's line naming `thread`.
std::string pin_worker(const std::vector<int>& allowed, unsigned worker, unsigned workers,
                       const std::string& thread);

// While alive, the calling thread is bound to `cpus`; its previous mask is restored after. For a
// thread that runs tasks only for a while: serial's harness thread, tbb's arena threads.
class ScopedPin {
 public:
  explicit ScopedPin(const cpu_set_t& cpus);
  ~ScopedPin();
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;
  // 0, or the errno of the refusal (the thread then runs where it ran before).
  int error() const noexcept { return error_; }

 private:
  cpu_set_t previous_;
  int error_ = 0;
};

}  // namespace schedlab
