// steal-half: Go's work-stealing scheduler (runtime/proc.go) on schedlab's fiber runtime.
//
// (One file of ~760 lines on purpose, like proc.go itself: the design essay, the spinning
// protocol and the policy that implements them read top to bottom in one place, and every
// deviation from Go is named beside the code it concerns. The queue is run_queue.hpp.)
//
// Terms are Go's. G: a task. M: a worker thread (Worker). P: a processor, the right to run tasks
// plus a local run queue; there are exactly --threads of them (GOMAXPROCS) and an M runs tasks
// only while it holds one. Ms are worker threads; there may be more Ms than Ps (threads parked,
// or blocked in a system call), never more running tasks than Ps.
//
// Where a runnable task goes
//
//   spawn, or a join completing, on an M holding P ──► P.runnext (one slot, owner only)
//                                  the task it displaces ──► P's local queue, at the tail
//                                                          │ full (256)
//                                                          ▼
//                             older half + displaced task ──► global queue (runqputslow)
//   the root (from outside), a task back from a system call with no P ──► global queue
//
// Where an M holding P looks for its next task (schedule + findRunnable)
//
//   1. every 61st schedule tick: the global queue first. Without it two tasks that keep
//      respawning each other would own the local queue and starve the global queue forever.
//   2. P's runnext slot, then its local queue at the tail (owner LIFO, the seeds' rule;
//      --local-order=fifo is Go's).
//   3. the global queue: a batch of size/GOMAXPROCS + 1, capped at half a local queue, so
//      work spreads over the Ps instead of one P draining it.
//   4. steal, if this M may spin (below): up to 4 passes over the other Ps in a random order,
//      taking half (rounded up) of the first non-empty victim's queue. Half, because after one
//      steal thief and victim hold about the same, so neither needs to steal again soon. The
//      thief runs one stolen task at once and queues the rest (run_queue.hpp steal_from).
//   5. nothing anywhere: give P back to the idle list, recheck, park the M.
//
// Spinning: why idle threads neither burn the CPU nor miss work
//
//   A spinning M holds a P and no task, and looks for work to steal.
//   - At most half of the busy Ps may have a spinner (2*nmspinning < GOMAXPROCS - npidle), so
//     idle Ms do not all hammer the busy Ps' queues at once.
//   - A new runnable task wakes a parked M only if a P is idle and nobody spins (wakep): a
//     spinner would find the task anyway, and waking a thread costs a futex call.
//   - If every P is busy and nobody spins, the submitter sets need_spinning (Go's needspinning,
//     under the sched lock), and an M about to give up its P without spinning (others were
//     spinning when it looked) spins once more instead. Otherwise that M parks while the task
//     waits in a busy P's queue behind a task that may never yield: Go's preemption gets it run
//     in the end, schedlab has none (tests/stress: StealHalfSpinningProtocol).
//   - A spinner that finds work stops spinning; if it was the last spinner it wakes another
//     (resetspinning), so a burst of new work is spread one thread at a time.
//   - A spinner that gives up decrements nmspinning first and then looks at every queue again:
//     a submitter that saw it spinning woke nobody. That is a store-load pair on each side
//     (push, then read nmspinning; decrement nmspinning, then read the queues), and at least one
//     side must see the other. Go puts a barrier on both sides (its tail store is an XCHG on
//     amd64). Here the frequent side, every push, is two plain stores (run_queue.hpp), and the
//     rare side carries the barrier for both: the giving-up spinner issues membarrier(2), which
//     makes every thread of the process execute a full barrier, before its second look. Where the
//     kernel refuses membarrier, the queues are built `fenced` and every push ends with a seq_cst
//     store, as before.
//     Why one barrier suffices (the asymmetric-fence argument of membarrier(2)): the call makes
//     every running thread of the process execute a full barrier at some point B of its program
//     order between the call's start and its return, and a thread not running has drained its
//     stores at its last context switch. Take a submitter whose push (tail store S) precedes its
//     read of nmspinning (L; a compiler fence keeps L after S, run_queue.hpp publish_tail), and a
//     spinner whose decrement (D, a locked RMW, globally visible before the call) precedes the
//     call and then its look at the queues (R). If B falls after S, S is visible before the call
//     returns, so R sees the push. If B falls before S, then L, after B, reads nmspinning after D
//     took effect, so the submitter sees one spinner fewer and wakes someone if none spins. So at
//     least one side sees the other, which is all Go's two barriers give.
//
// Blocking calls: the hand-off (entersyscallblock, handoffp, exitsyscall)
//
//   blocking(f) on M1 holding P:  M1 releases P ──► P has work? start an M (idle or new, up
//                                                   to --max-threads) on P
//                                                ──► no work: P goes to the idle list
//   f returns on M1:  take the old P back if it is idle, else any idle P;
//                     else put the task on the global queue and park M1 (a spare M now).
//
//   Go decides lazily: entersyscall keeps the P, and sysmon retakes it when the call has lasted
//   20 µs or more. We hand off at once, as Go's entersyscallblock does for calls known to block:
//   schedlab::blocking marks exactly such calls, and there is no asynchronous preemption to
//   justify a monitor thread. Cost: one hand-over per call even when the call would have been
//   fast; gain: a P never sits idle for 20 µs behind a blocked thread.
//
// Deviations from Go, each for a stated reason
//   - The local queue is one 64-bit word for head, tail and a version (run_queue.hpp), because
//     the owner pops at the tail while thieves take batches at the head.
//   - An M that gives up its P lists itself idle in the same critical section. Go lists it
//     later (stopm), and a wakep in between finds an idle P but no idle M and creates a thread;
//     we create threads only when every existing one is busy or blocked.
//   - Which stolen task the thief runs at once depends on its local order: the newest under
//     FIFO (Go's runqsteal), the oldest under LIFO. Go's choice under a LIFO owner would run the
//     batch newest to oldest and start the oldest, likely largest, task last: on loops one-long
//     the thief ran the long task after 99 short ones and idled as much as fair.
//   - runnext cannot be stolen. Go lets a thief take it in its last pass, after sleeping 3 µs
//     so the owner (likely about to run it) gets there first; that costs the owner an atomic
//     exchange on every pop of runnext. Ours is a plain pointer: the newest task of each P is
//     hidden from thieves, every older one is not. --runnext=off gives the plain queue.
//   - No network poller, no timers, no GC, no preemption: schedlab has none of them. Without
//     preemption a pair of tasks respawning each other through runnext (or a LIFO tail) keeps
//     running before the older tasks of the same P; thieves are what get the rest run. The
//     1-in-61 global check counts schedule ticks, and, as in Go, a task taken from runnext
//     inherits its readier's tick (inheritTime): a runnext ping-pong never ticks. Go relies on
//     sysmon preempting that inherited time slice after 10 ms; schedlab cannot, so there the
//     global queue waits for the ping-pong to end, while a ping-pong through the local queue
//     (--runnext off, or a LIFO tail) ticks and is interrupted by the check.
//     --runnext-tick count makes runnext pops tick too (the ablation; steal_half_test shows
//     which mechanism feeds the global queue in each case).
//
// Spinning off (--spinning off, the ablation of the spinning claim): an M that finds no work
// in its look at the queues and one round of steals parks at once, without joining nmspinning
// (unless need_spinning asks it to look once more); so nmspinning stays 0 and every new
// runnable task wakes a parked M while a P is idle.
#include "steal_half.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "../assert.hpp"
#include "../runtime/policy_runtime.hpp"
#include "../runtime/task_list.hpp"
#include "global_batch.hpp"

namespace schedlab {
namespace {

constexpr int kStealPasses = 4;  // Go: stealTries = 4

// The spinning protocol's store-load barrier, issued by a spinner that gives up (see the
// spinning notes above): membarrier(2) runs a full memory barrier on every running thread of
// the process, so a push another thread made before it is visible after it. Registered once per
// process; false where the kernel does not offer it (then pushes are fenced instead).
bool process_barrier_available() {
  static const bool available =
      ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  return available;
}
void process_barrier() { ::syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0); }

struct alignas(64) Processor {
  Processor(std::uint32_t id_, std::uint32_t capacity, bool fenced_pushes)
      : id(id_), runq(capacity, fenced_pushes), overflow(capacity / 2),
        rng(0x9E3779B97F4A7C15ull * (id_ + 1)) {}

  const std::uint32_t id;
  LocalRunQueue runq;
  // Go's runnext: the newest runnable task, in front of runq. Only the owner touches it, so
  // pushing and popping it needs no atomic instruction; the price is that thieves cannot take
  // it (Go lets them, after a grace period; we do not, see the design notes above).
  Task* runnext = nullptr;
  std::uint32_t schedtick = 0;    // tasks started on this P; owner only
  std::uint32_t until_global_check = 0;  // ticks left before the next global-first look; owner only
  std::atomic<bool> idle{false};  // on the idle list; thieves skip idle Ps without the lock
  Processor* idle_next = nullptr;  // idle list link; guarded by the sched lock
  std::vector<Task*> overflow;     // scratch for runqputslow; owner only
  std::uint64_t rng;               // victim order; owner only

  // xorshift64: victim order needs speed, not quality (Go uses its fastrand for the same).
  std::uint32_t random() noexcept {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return static_cast<std::uint32_t>(rng >> 32);
  }
};

// The fields of Go's m that this policy needs, one per worker thread.
struct MState {
  Processor* p = nullptr;          // the P held; read and written by this M only
  bool spinning = false;           // this M only
  std::uint64_t spin_start = 0;    // this M only
  Processor* syscall_p = nullptr;  // the P given up for a blocking call (Go's m.oldp)
  Processor* next_p = nullptr;     // a P handed over by startm; guarded by the sched lock
  bool next_spinning = false;      // guarded by the sched lock
  bool listed_idle = false;        // on the idle M list; guarded by the sched lock
};

class StealHalfPolicy final : public Policy {
 public:
  StealHalfPolicy(unsigned processors, StealHalfConfig config)
      : config_(config), nprocs_(processors), fenced_pushes_(!process_barrier_available()) {
    for (std::uint32_t i = 0; i < nprocs_; ++i) {
      procs_.push_back(std::make_unique<Processor>(i, config_.capacity, fenced_pushes_));
    }
    // Victim orders walk the Ps with a stride coprime to their number, so that every start
    // and stride visits each P once (Go's randomOrder).
    for (std::uint32_t i = 1; i <= nprocs_; ++i) {
      if (std::gcd(i, nprocs_) == 1) coprimes_.push_back(i);
    }
    std::lock_guard lock(sched_mutex_);
    for (std::uint32_t i = nprocs_; i-- > 0;) pidleput_locked(*procs_[i]);
  }

  void attach(FiberRuntime& runtime) override {
    Policy::attach(runtime);
    mstates_ = std::make_unique<MState[]>(runtime.config().max_threads);
  }

  // Every M starts with no P, listed idle: the first runnable task hands it one.
  void on_worker_added(Worker& w) override {
    w.policy_state = &mstates_[w.index()];
    w.proc = Worker::kNoProc;
    std::lock_guard lock(sched_mutex_);
    mput_locked(w);
  }

  void submit_new(Task& t, Worker* from) override { submit(t, from); }
  void submit_ready(Task& t, Worker* from) override { submit(t, from); }

  // Executed by w's thread only. Go's schedule(): find a task, stop spinning if we were. The
  // common case (a task in runnext or the local queue, no global check due) stays in this
  // small function; everything else is in find_runnable.
  Task* next(Worker& w) override {
    MState& ms = state(w);
    Processor* p = ms.p;
    if (p != nullptr && !ms.spinning && p->until_global_check != 0) [[likely]] {
      Task* t = p->runnext;
      bool inherit = false;
      if (t != nullptr) {
        p->runnext = nullptr;
        inherit = config_.runnext_inherits_tick;
      } else {
        t = p->runq.pop(config_.order);
      }
      if (t != nullptr) [[likely]] {
        w.stats.add(Counter::local_pops);
        if (!inherit) tick(*p);
        return t;
      }
    }
    return next_slow(w);
  }

  [[gnu::noinline]] Task* next_slow(Worker& w) {
    MState& ms = state(w);
    for (;;) {
      if (ms.p == nullptr && !stopm(w)) return nullptr;
      bool inherit = false;
      Task* t = find_runnable(w, &inherit);
      if (t == nullptr) continue;  // P given up; park on the next iteration
      if (ms.spinning) reset_spinning(w);
      if (!inherit) tick(*ms.p);
      return t;
    }
  }

  // Go's schedtick, kept as a countdown to the next global-first look (a division by 61 per
  // task would cost more than the rest of the fast path). Owner only.
  static void tick(Processor& p) {
    ++p.schedtick;
    --p.until_global_check;
  }

  void shutdown() override {
    stopping_.store(true, std::memory_order_seq_cst);
    std::lock_guard lock(sched_mutex_);
    for (Worker* m : idle_ms_) m->parker.unpark();
  }

  void blocking_begin(Worker& w) override {
    if (!config_.handoff) return;
    MState& ms = state(w);
    Processor* p = ms.p;
    ms.syscall_p = p;
    ms.p = nullptr;
    w.proc = Worker::kNoProc;
    handoff(*p, w);
  }

  void blocking_end(Worker& w) override {
    if (!config_.handoff) return;
    MState& ms = state(w);
    Processor* old = std::exchange(ms.syscall_p, nullptr);
    Processor* p = nullptr;
    {
      std::lock_guard lock(sched_mutex_);
      if (old->idle.load(std::memory_order_relaxed)) {
        pidle_remove_locked(*old);
        p = old;
      } else {
        p = pidleget_locked();
      }
    }
    if (p != nullptr) {
      acquire(w, *p);
      return;
    }
    // No P free: this task waits in the global queue and this thread becomes a spare M.
    runtime_->suspend_current([this](Task& t, Worker& here) {
      push_global(t, &here);
      wake_if_needed(&here);
    });
  }

  void add_counters(CounterSet& c) const override {
    c[Counter::global_pushes] += external_pushes_.load(std::memory_order_relaxed);
  }

  // Go's schedtrace figures, read from the lock-free mirrors as Go reads them; a P's count is
  // its runq length (runnext, owner-only, is not counted, as in Go's output).
  void describe(SchedSnapshot& s) const override {
    s.idle_procs = npidle_.load(std::memory_order_relaxed);
    s.spinning = nmspinning_.load(std::memory_order_relaxed);
    s.global_queue = global_size_.load(std::memory_order_relaxed);
    for (const auto& p : procs_) s.local_queues.push_back(p->runq.size());
  }

  // Go's scheddetail for the deadlock report: each P (idle, handed to an M, or held) with its
  // queues, each M with its P, hand-over slot and idle listing, and the counters wakep reads.
  // Every M sleeps when this runs, and each released the sched lock after its last write to its
  // own fields (stopm), so reading them under the lock is not a race.
  std::string dump_state() const override {
    // Built by appending: GCC 12 warns falsely (-Wrestrict) about "P" + std::to_string(...).
    auto name = [](const char* kind, std::uint32_t i) {
      return std::string(kind).append(std::to_string(i));
    };
    auto proc = [&](const Processor* p) { return p == nullptr ? std::string("none") : name("P", p->id); };
    std::lock_guard lock(sched_mutex_);
    std::string out = "\n  steal-half: global queue " + std::to_string(global_.size()) +
                      ", idle Ps " + std::to_string(npidle_.load()) + ", spinning Ms " +
                      std::to_string(nmspinning_.load()) + ", idle M list [";
    for (const Worker* m : idle_ms_) {
      out.append(m == idle_ms_.front() ? "" : " ").append(name("M", m->index()));
    }
    out += "]";
    const unsigned nms = runtime_->worker_count();
    for (const auto& p : procs_) {
      std::string where = p->idle.load() ? "idle" : "off the idle list, not yet handed to an M";
      for (unsigned i = 0; i < nms; ++i) {
        if (mstates_[i].p == p.get()) where = "held by " + name("M", i);
        if (mstates_[i].next_p == p.get()) where = "handed to " + name("M", i) + " (next_p)";
      }
      out.append("\n  ").append(proc(p.get())).append(": ").append(where);
      out.append(", runnext ").append(p->runnext != nullptr ? "1 task" : "empty");
      out.append(", runq ").append(std::to_string(p->runq.size()));
    }
    for (unsigned i = 0; i < nms; ++i) {
      const MState& ms = mstates_[i];
      out.append("\n  ").append(name("M", i)).append(": P ").append(proc(ms.p));
      out.append(", next_p ").append(proc(ms.next_p));
      if (ms.next_p != nullptr && ms.next_spinning) out += " (spinning)";
      out.append(", blocking call's P ").append(proc(ms.syscall_p));
      if (ms.spinning) out += ", spinning";
      if (ms.listed_idle) out += ", on the idle M list";
    }
    return out;
  }

 private:
  MState& state(Worker& w) { return *static_cast<MState*>(w.policy_state); }

  // Executed by w. A P is held by one M at a time, and never while it is listed idle.
  void acquire(Worker& w, Processor& p) {
    SCHEDLAB_ASSERT(state(w).p == nullptr, "an M holds at most one P");
    SCHEDLAB_ASSERT(!p.idle.load(std::memory_order_relaxed), "a P is taken off the idle list before an M holds it");
    state(w).p = &p;
    w.proc = p.id;
  }

  // ---- where a task goes ----------------------------------------------------------------

  void submit(Task& t, Worker* from) {
    Processor* p = from != nullptr ? state(*from).p : nullptr;
    if (p != nullptr) {
      // Work only this P can run (its runnext) is no reason to wake anybody.
      if (!push_local(*from, *p, t)) return;
    } else {
      push_global(t, from);
    }
    wake_if_needed(from);
  }

  // Executed by the M holding p. Go's runqput: the new task takes runnext and the one it
  // displaces goes to runq. Returns whether a thief can now see more work.
  bool push_local(Worker& w, Processor& p, Task& t) {
    w.stats.add(Counter::local_pushes);
    Task* queued = &t;
    if (config_.runnext) {
      queued = std::exchange(p.runnext, &t);
      if (queued == nullptr) return false;
    }
    push_runq(w, p, *queued);
    return true;
  }

  // Go's runqput tail + runqputslow: full runq moves its older half, plus t, to the global queue.
  void push_runq(Worker& w, Processor& p, Task& t) {
    if (!p.runq.push(t)) [[unlikely]] overflow(w, p, t);
  }

  [[gnu::noinline]] void overflow(Worker& w, Processor& p, Task& t) {
    for (;;) {
      if (p.runq.push(t)) return;
      const std::uint32_t n = p.runq.take_older_half(p.overflow.data());
      if (n == 0) continue;  // a thief made room
      for (std::uint32_t i = 0; i + 1 < n; ++i) p.overflow[i]->next = p.overflow[i + 1];
      p.overflow[n - 1]->next = &t;
      {
        std::lock_guard lock(sched_mutex_);
        global_.push_back_chain(*p.overflow[0], t, n + 1);
        global_size_.fetch_add(n + 1, std::memory_order_seq_cst);
      }
      w.stats.add(Counter::overflows);
      w.stats.add(Counter::global_pushes, n + 1);
      return;
    }
  }

  void push_global(Task& t, Worker* from) {
    {
      std::lock_guard lock(sched_mutex_);
      global_.push_back(t);
      global_size_.fetch_add(1, std::memory_order_seq_cst);
    }
    if (from != nullptr) {
      from->stats.add(Counter::global_pushes);
    } else {
      external_pushes_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // After a push a thief can see (Go calls wakep from newproc and ready). Nobody is woken if
  // someone spins: the spinner finds the task, or looks again when it gives up. Else an idle P
  // gets a spinning M. Else every P is busy, and the M of one of them may be about to give its
  // P up without stealing (others were spinning when it looked) and so without seeing this
  // task: need_spinning_ makes that M spin instead (find_runnable). Go's wakep takes the sched
  // lock to find that out on every call that finds nobody spinning; here only the first such
  // call after the flag was consumed does, and a busy run of pushes reads the flag set.
  void wake_if_needed(Worker* from) {
    if (nmspinning_.load(std::memory_order_seq_cst) != 0) return;
    if (npidle_.load(std::memory_order_seq_cst) != 0) [[unlikely]] {
      wakep(from);
    } else if (!need_spinning_.load(std::memory_order_relaxed)) [[unlikely]] {
      note_need_spinning(from);
    }
  }

  // Every P was busy and nobody spinning after our push. Under the sched lock, which an M holds
  // from its check of the flag to listing its P idle, either that M sees the flag, or we see
  // its P idle and wake someone for it.
  [[gnu::noinline]] void note_need_spinning(Worker* from) {
    {
      std::lock_guard lock(sched_mutex_);
      if (npidle_.load(std::memory_order_relaxed) == 0) {
        need_spinning_.store(true, std::memory_order_relaxed);
        return;
      }
    }
    wakep(from);
  }

  // Start one spinning M on an idle P, unless someone else is already spinning. With spinning
  // off, start a plain M on an idle P every time (nobody spins, so nobody else would look).
  [[gnu::noinline]] void wakep(Worker* from) {
    const bool spinning = config_.spinning;
    std::uint32_t zero = 0;
    if (spinning && !nmspinning_.compare_exchange_strong(zero, 1, std::memory_order_seq_cst)) return;
    Processor* p;
    {
      std::lock_guard lock(sched_mutex_);
      p = pidleget_locked();
      if (p == nullptr) {
        // The idle P we saw was taken meanwhile: every P may now be busy, as in
        // note_need_spinning (Go's pidlegetSpinning).
        need_spinning_.store(true, std::memory_order_relaxed);
        if (spinning) nmspinning_decrement();
        return;
      }
    }
    startm(*p, spinning, from);
  }

  // Hands p to an idle M (or a new one) and wakes it. Go's startm.
  void startm(Processor& p, bool spinning, Worker* from) {
    for (;;) {
      Worker* m = nullptr;
      {
        std::lock_guard lock(sched_mutex_);
        m = mget_locked();
        if (m != nullptr) {
          MState& ms = state(*m);
          ms.next_p = &p;
          ms.next_spinning = spinning;
        }
      }
      if (m != nullptr) {
        runtime_->note_unpark(from);
        m->parker.unpark();
        return;
      }
      // Every M is busy or blocked in a call: start one more. It lists itself idle, and the
      // next iteration hands it p (or another idle M turns up first).
      if (runtime_->add_worker() == nullptr) {
        // At --max-threads. p's work stays queued for a busy P, or for a thread coming back
        // from its call, which takes an idle P first.
        std::lock_guard lock(sched_mutex_);
        pidleput_locked(p);
        if (spinning) nmspinning_decrement();
        return;
      }
    }
  }

  // Go's handoffp: p was released by an M entering a blocking call.
  void handoff(Processor& p, Worker& from) {
    if (p.runnext != nullptr || !p.runq.empty() ||
        global_size_.load(std::memory_order_seq_cst) != 0) {
      from.stats.add(Counter::handoffs);
      startm(p, /*spinning=*/false, &from);
      return;
    }
    // No work for p itself; if nobody is looking for work anywhere, let p's new M look (as a
    // spinner: with spinning off nobody looks, and p just goes idle).
    std::uint32_t zero = 0;
    if (config_.spinning && npidle_.load(std::memory_order_seq_cst) == 0 &&
        nmspinning_.compare_exchange_strong(zero, 1, std::memory_order_seq_cst)) {
      from.stats.add(Counter::handoffs);
      startm(p, /*spinning=*/true, &from);
      return;
    }
    std::lock_guard lock(sched_mutex_);
    pidleput_locked(p);
  }

  // ---- where an M looks ------------------------------------------------------------------

  // Executed by w, holding a P. Returns a task, or nullptr after giving the P up (w is then
  // listed idle and the caller parks it). *inherit: the task came from runnext and inherits the
  // time slice (it must not tick).
  Task* find_runnable(Worker& w, bool* inherit) {
    MState& ms = state(w);
  top:
    Processor& p = *ms.p;
    // schedtick % global_check == 0, as a countdown (a division costs more than the rest of
    // this function's fast path).
    if (config_.global_check != 0 && p.until_global_check == 0) {
      p.until_global_check = config_.global_check;
      if (global_size_.load(std::memory_order_relaxed) != 0) {
        std::lock_guard lock(sched_mutex_);
        if (Task* t = global_get_locked(w, p, 1)) return t;
      }
    }
    if (Task* t = p.runnext) {
      p.runnext = nullptr;
      *inherit = config_.runnext_inherits_tick;
      w.stats.add(Counter::local_pops);
      return t;
    }
    if (Task* t = p.runq.pop(config_.order)) {
      w.stats.add(Counter::local_pops);
      return t;
    }
    if (global_size_.load(std::memory_order_relaxed) != 0) {
      std::lock_guard lock(sched_mutex_);
      if (Task* t = global_get_locked(w, p, 0)) return t;
    }
    if (!config_.spinning) {
      // One look at the other Ps, not counted as spinning, then park (spinning off).
      if (Task* t = steal_work(w, p, 1)) return t;
    } else if (const std::uint32_t busy = nprocs_ - npidle_.load(std::memory_order_seq_cst);
               ms.spinning || 2 * nmspinning_.load(std::memory_order_seq_cst) < busy) {
      if (!ms.spinning) become_spinning(ms);
      if (Task* t = steal_work(w, p, kStealPasses)) return t;
    }
    // Nothing anywhere: give up the P.
    {
      std::lock_guard lock(sched_mutex_);
      if (Task* t = global_get_locked(w, p, 0)) return t;
      if (!ms.spinning && need_spinning_.load(std::memory_order_relaxed)) {
        // A submitter found every P busy and nobody spinning, so it woke nobody, and we did not
        // steal (others spun when we looked; or spinning is off and our one round came before
        // its push): its task may sit in a queue we never saw. Look again before giving up,
        // as a spinner (Go's needspinning). Only a spinner looks again after giving up.
        need_spinning_.store(false, std::memory_order_relaxed);
        if (config_.spinning) become_spinning(ms);
        goto top;
      }
      pidleput_locked(p);
      ms.p = nullptr;
      w.proc = Worker::kNoProc;
      mput_locked(w);
    }
    if (!ms.spinning) return nullptr;
    stop_spinning(w);
    // The delicate part: a submitter that saw us spinning woke nobody. Now that nmspinning no
    // longer counts us, look again; if there is work, take an idle P back and spin again. The
    // barrier makes every push made before it visible to that look (pushes carry none).
    if (!fenced_pushes_) process_barrier();
    if (!work_visible()) return nullptr;
    {
      std::lock_guard lock(sched_mutex_);
      if (!ms.listed_idle || idle_procs_ == nullptr) return nullptr;  // someone else will
      m_unlist_locked(w);
      acquire(w, *pidleget_locked());
    }
    become_spinning(ms);
    goto top;
  }

  // Executed by the M whose state ms is, holding a P. Go's becomeSpinning.
  void become_spinning(MState& ms) {
    SCHEDLAB_ASSERT(!ms.spinning && ms.p != nullptr, "an M starts spinning once, holding a P");
    ms.spinning = true;
    ms.spin_start = now_ns();
    nmspinning_.fetch_add(1, std::memory_order_seq_cst);
  }

  bool work_visible() const {
    if (global_size_.load(std::memory_order_seq_cst) != 0) return true;
    for (const auto& q : procs_) {
      if (!q->idle.load(std::memory_order_relaxed) && !q->runq.empty()) return true;
    }
    return false;
  }

  // Executed by w holding p, with p's queue empty. Go's stealWork, `passes` rounds.
  Task* steal_work(Worker& w, Processor& p, int passes) {
    for (int pass = 0; pass < passes; ++pass) {
      const std::uint32_t r = p.random();
      std::uint32_t pos = r % nprocs_;
      const std::uint32_t stride = coprimes_[(r / nprocs_) % coprimes_.size()];
      for (std::uint32_t i = 0; i < nprocs_; ++i, pos = (pos + stride) % nprocs_) {
        Processor& victim = *procs_[pos];
        if (&victim == &p || victim.idle.load(std::memory_order_relaxed)) continue;
        w.stats.add(Counter::steal_attempts);
        std::uint32_t moved = 0;
        if (Task* t = p.runq.steal_from(victim.runq, config_.steal, config_.order, &moved)) {
          w.stats.add(Counter::steals);
          w.stats.add(Counter::tasks_stolen, moved);
          if (w.tracing()) {
            const std::uint64_t now = now_ns();
            w.trace.add(TraceKind::steal, now, now, moved);
          }
          return t;
        }
      }
    }
    return nullptr;
  }

  // Go's globrunqget: take a batch, run the first, queue the rest locally. Sched lock held.
  Task* global_get_locked(Worker& w, Processor& p, std::uint32_t max) {
    const std::uint32_t size = static_cast<std::uint32_t>(global_.size());
    SCHEDLAB_ASSERT(global_size_.load(std::memory_order_relaxed) == size,
                    "the lock-free mirror of the global queue's length is exact under the lock");
    if (size == 0) return nullptr;
    const std::uint32_t n = global_batch_size(size, nprocs_, max, p.runq.capacity());
    global_size_.fetch_sub(n, std::memory_order_seq_cst);
    Task* first = global_.pop_front();
    for (std::uint32_t i = 1; i < n; ++i) {
      // p's queue is empty on every path that asks for more than one (steps 3 and 5), and the
      // batch is at most half of it: a refused push would lose the task.
      const bool queued = p.runq.push(*global_.pop_front());
      SCHEDLAB_ASSERT(queued, "a global batch fits in the local queue");
    }
    w.stats.add(Counter::global_pops, n);
    return first;
  }

  void reset_spinning(Worker& w) {
    stop_spinning(w);
    // The last spinner to find work wakes another: there may be more where this came from.
    if (nmspinning_.load(std::memory_order_seq_cst) == 0 &&
        npidle_.load(std::memory_order_seq_cst) != 0) {
      wakep(&w);
    }
  }

  void stop_spinning(Worker& w) {
    MState& ms = state(w);
    SCHEDLAB_ASSERT(ms.spinning, "only a spinning M stops spinning");
    ms.spinning = false;
    nmspinning_decrement();
    w.stats.add(Counter::spinning_ns, now_ns() - ms.spin_start);
  }

  // Every decrement of nmspinning undoes one increment: a spinner stopping, or a wakep/startm
  // that claimed a spinner slot and found nobody to give it to. Go: throw("negative nmspinning").
  void nmspinning_decrement() {
    const std::uint32_t before = nmspinning_.fetch_sub(1, std::memory_order_seq_cst);
    SCHEDLAB_ASSERT(before != 0, "the count of spinning Ms never goes negative");
  }

  // Parks w (which holds no P) until startm hands it one. false: shutting down.
  bool stopm(Worker& w) {
    MState& ms = state(w);
    SCHEDLAB_ASSERT(ms.p == nullptr, "an M parks only without a P");
    for (;;) {
      {
        std::lock_guard lock(sched_mutex_);
        if (ms.next_p != nullptr) {
          acquire(w, *std::exchange(ms.next_p, nullptr));
          ms.spinning = ms.next_spinning;
          if (ms.spinning) ms.spin_start = now_ns();
          return true;
        }
        if (stopping_.load(std::memory_order_seq_cst)) return false;
        // A thread that parks without a P relies on whoever queued work to wake an M, and at
        // --max-threads that wake-up can fail: a thread back from a blocking call finds no idle
        // P (another thread's wakep holds it in transit), queues its task globally and sees
        // nmspinning != 0; that wakep's startm finds no idle M (this one is not listed yet) and
        // cannot create one, so it returns the P to the idle list. Both then park with work
        // queued (tests/stress: StealHalfLostWakeup). So look once more, under the lock.
        if (Processor* p = idle_proc_with_work_locked()) {
          pidle_remove_locked(*p);
          if (ms.listed_idle) m_unlist_locked(w);
          acquire(w, *p);
          ms.spinning = false;
          return true;
        }
        if (!ms.listed_idle) mput_locked(w);
      }
      w.park();
    }
  }

  // ---- idle lists (Go's pidle and midle); the sched lock is held ---------------------------

  // An idle P with tasks in its own queues (left there by a hand-off that found no thread),
  // else any idle P if the global queue has tasks; nullptr if neither.
  Processor* idle_proc_with_work_locked() {
    for (Processor* p = idle_procs_; p != nullptr; p = p->idle_next) {
      if (p->runnext != nullptr || !p->runq.empty()) return p;
    }
    return global_.empty() ? nullptr : idle_procs_;
  }

  void pidleput_locked(Processor& p) {
    SCHEDLAB_ASSERT(!p.idle.load(std::memory_order_relaxed), "a P is on the idle list at most once");
    p.idle_next = idle_procs_;
    idle_procs_ = &p;
    p.idle.store(true, std::memory_order_relaxed);
    const std::uint32_t before = npidle_.fetch_add(1, std::memory_order_seq_cst);
    SCHEDLAB_ASSERT(before < nprocs_, "no more idle Ps than Ps");
  }
  Processor* pidleget_locked() {
    Processor* p = idle_procs_;
    if (p != nullptr) pidle_remove_locked(*p);
    return p;
  }
  void pidle_remove_locked(Processor& p) {
    Processor** link = &idle_procs_;
    while (*link != nullptr && *link != &p) link = &(*link)->idle_next;
    SCHEDLAB_ASSERT(*link == &p, "a P taken off the idle list was on it");
    if (*link == nullptr) return;
    *link = p.idle_next;
    p.idle.store(false, std::memory_order_relaxed);
    const std::uint32_t before = npidle_.fetch_sub(1, std::memory_order_seq_cst);
    SCHEDLAB_ASSERT(before != 0, "the count of idle Ps never goes negative");
  }
  void mput_locked(Worker& w) {
    SCHEDLAB_ASSERT(!state(w).listed_idle, "an M is on the idle list at most once");
    idle_ms_.push_back(&w);
    state(w).listed_idle = true;
  }
  Worker* mget_locked() {
    if (idle_ms_.empty()) return nullptr;
    Worker* m = idle_ms_.back();
    idle_ms_.pop_back();
    SCHEDLAB_ASSERT(state(*m).listed_idle, "an M taken from the idle list was listed");
    state(*m).listed_idle = false;
    return m;
  }
  void m_unlist_locked(Worker& w) {
    const auto it = std::find(idle_ms_.begin(), idle_ms_.end(), &w);
    SCHEDLAB_ASSERT(it != idle_ms_.end() && state(w).listed_idle, "an M taken off the idle list was on it");
    if (it == idle_ms_.end()) return;
    idle_ms_.erase(it);
    state(w).listed_idle = false;
  }

  const StealHalfConfig config_;
  const std::uint32_t nprocs_;
  const bool fenced_pushes_;  // membarrier unavailable: every push carries the barrier itself
  std::vector<std::unique_ptr<Processor>> procs_;
  std::vector<std::uint32_t> coprimes_;
  std::unique_ptr<MState[]> mstates_;

  mutable std::mutex sched_mutex_;  // Go's sched.lock: the global queue and both idle lists
  TaskList global_;         // guarded by sched_mutex_
  Processor* idle_procs_ = nullptr;  // guarded by sched_mutex_
  std::vector<Worker*> idle_ms_;     // guarded by sched_mutex_
  // Mirrors read without the lock (Go reads sched.runqsize, npidle, nmspinning the same way).
  std::atomic<std::uint32_t> global_size_{0};
  std::atomic<std::uint32_t> npidle_{0};
  std::atomic<std::uint32_t> nmspinning_{0};
  // Go's sched.needspinning: a submitter found every P busy and nobody spinning. Set and cleared
  // under the sched lock; read without it only as a hint (wake_if_needed).
  std::atomic<bool> need_spinning_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> external_pushes_{0};
};

}  // namespace

std::unique_ptr<Scheduler> make_steal_half(const RuntimeConfig& runtime,
                                           const StealHalfConfig& config) {
  RuntimeConfig with_spares = runtime;
  with_spares.max_threads = config.max_threads;
  return std::make_unique<PolicyRuntime<StealHalfPolicy>>(
      std::make_unique<StealHalfPolicy>(runtime.threads, config), with_spares);
}

}  // namespace schedlab
