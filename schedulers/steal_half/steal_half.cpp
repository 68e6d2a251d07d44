// steal-half: Go's work-stealing scheduler (runtime/proc.go) on schedlab's fiber runtime.
//
// (One file on purpose, like proc.go itself: the design essay, the spinning protocol and the
// policy that implements them read top to bottom in one place, and every deviation from Go is
// named beside the code it concerns. Beside it: the P (processor.hpp), its queue (run_queue.hpp),
// its runnext slot (runnext.hpp), the system monitor (sysmon.hpp), and the barrier the rare
// sides of two protocols pay for their frequent sides (process_barrier.hpp).)
//
// Terms are Go's. G: a task. M: a worker thread (Worker). P: a processor, the right to run tasks
// plus a local run queue; there are exactly --threads of them (GOMAXPROCS) and an M runs tasks
// only while it holds one. Ms are worker threads; there may be more Ms than Ps (threads parked,
// or blocked in a system call), never more running tasks than Ps.
//
// Where a runnable task goes (Go's newproc, ready, runqput)
//
//   spawn, or a join completing, on an M holding P ──► P.runnext (one slot)
//   a task readied by a send, a receive or an unlock ─┘ (Go's ready: counted in ready_runnext)
//                                  the task it displaces ──► P's local queue, at the tail
//                                                          │ full (256)
//                                                          ▼
//                             older half + displaced task ──► global queue (runqputslow)
//   the root (from outside), a task back from a system call with no P, a task that yields or
//   is preempted (Go's Gosched, gopreempt_m) ──► global queue
//   then, after every put (runnext included): wake an M if a P is idle and nobody spins (wakep)
//
// Where an M holding P looks for its next task (schedule + findRunnable)
//
//   1. every 61st schedule tick: the global queue first. Without it two tasks that keep
//      respawning each other would own the local queue and starve the global queue forever.
//   2. P's runnext slot, then its local queue at the tail (owner LIFO, the seeds' rule;
//      --local-order=fifo is Go's).
//   3. the global queue: a batch of size/GOMAXPROCS + 1, capped at half a local queue, so
//      work spreads over the Ps instead of one P draining it.
//   4. the network poller, without blocking (netpoll(0)), if a task waits on a socket and no M
//      is blocked in the poller already: the tasks it readies are work found here (below).
//   5. steal, if this M may spin (below): up to 4 passes over the other Ps in a random order,
//      taking half (rounded up) of the first non-empty victim's queue. Half, because after one
//      steal thief and victim hold about the same, so neither needs to steal again soon. The
//      thief runs one stolen task at once and queues the rest (run_queue.hpp steal_from). On the
//      last pass a victim whose queue is empty may lose its runnext (Go's runqgrab): after a
//      3 µs sleep if its M runs, so that a task readied just before its readier blocks or runs
//      long is not stranded, while one its P is about to run stays put; at once if its M is in a
//      blocking call. The owner's side of runnext stays plain stores (runnext.hpp).
//   6. nothing anywhere: give P back to the idle list, recheck, park the M; or, if a task waits
//      on a socket and no M is blocked in the poller, block in the poller instead (below).
//
// Spinning: why idle threads neither burn the CPU nor miss work
//
//   A spinning M holds a P and no task, and looks for work to steal.
//   - At most half of the busy Ps may have a spinner (2*nmspinning < GOMAXPROCS - npidle), so
//     idle Ms do not all hammer the busy Ps' queues at once.
//   - A new runnable task wakes a parked M only if a P is idle and nobody spins (wakep): a
//     spinner would find the task anyway, and waking a thread costs a futex call. As in Go,
//     every put asks, also one that only filled runnext: a thief may take runnext, and the
//     spawner may run long before its P gets there (tests: StealHalfWakeups). Asking on every
//     put costs ~8 instructions per task more (three loads of shared counters; callgrind, docs/schedulers.md).
//   - If every P is busy and nobody spins, the submitter sets need_spinning (Go's needspinning,
//     under the sched lock), and an M about to give up its P without spinning (others were
//     spinning when it looked) spins once more instead. Otherwise that M parks while the task
//     waits in a busy P's queue behind a task that may never yield: preemption gets it run in
//     the end, but only once the running task passes a safe point (below), and one that never
//     does would hold it for good (tests/stress: StealHalfSpinningProtocol).
//   - A spinner that finds work stops spinning; if it was the last spinner it wakes another
//     (resetspinning), so a burst of new work is spread one thread at a time.
//   - A spinner that gives up decrements nmspinning first and then looks at every queue again
//     (runnext included, where thieves may take it): a submitter that saw it spinning woke
//     nobody. That is a store-load pair on each side (push, then read nmspinning; decrement
//     nmspinning, then read the queues), and at least one side must see the other. Go puts a
//     barrier on both sides (its tail store is an XCHG on amd64). Here the frequent side, every
//     push, is plain stores (run_queue.hpp, runnext.hpp), and the rare side carries the barrier
//     for both: the giving-up spinner calls process_barrier() (membarrier(2); why one barrier
//     suffices is argued in process_barrier.hpp) before its second look. Where the kernel
//     refuses membarrier, the queues are built `fenced` and every push ends with a seq_cst
//     store, and runnext is never stolen.
//
// Blocking calls: Go's system-call path (reentersyscall, exitsyscallfast, exitsyscall0, sysmon,
// retake, handoffp)
//
//   --handoff lazy, the default, as Go does for an ordinary system call (a read of a file goes
//   through syscall.Syscall, which calls entersyscall):
//   blocking(f) on M1 holding P:  P stays with M1, marked in_call (reentersyscall): a store and a
//                                 load, no lock, no wake-up (unless the monitor sleeps deeply)
//   f returns on M1:              one CAS takes P back if it is still in_call (exitsyscallfast);
//                                 else P was retaken: take it back if it is idle, else any idle
//                                 P (exitsyscallfast_pidle); else queue the task globally and
//                                 park M1, a spare M now (exitsyscall0)
//   the system monitor (sysmon.hpp), every 20 µs while it retakes, backing off to 10 ms when it
//   does not: a P it saw in the same call (syscalltick) in two consecutive rounds is CASed out
//   of in_call (retake) and handed to another M by handoff() below (handoffp): started at once
//   if it has work; given a spinning M if nobody looks for work; else put on the idle list. A P
//   with nothing queued is left with its call while some M spins or some P is idle, for up to
//   10 ms: they would take any new work.
//   So a call that does not block costs an XCHG and a CAS, and one that blocks lends its P to
//   another thread after one or two of the monitor's rounds (a 20 µs sleep lasted 34-120 µs,
//   fastest to average, on the project's loaded VM; docs/schedulers.md has the figures).
//
//   --handoff eager (the ablation; steal-half's behaviour before the monitor): Go's
//   entersyscallblock, which Go uses only for its own timed sleeps (notetsleepg): M1 releases P
//   at once through handoff(), and takes it or another back on return as above. Every call then
//   pays Go's slowest path, a wake-up, two thread switches and a trip through the global queue,
//   whether it blocks or not. --handoff off keeps P blocked with M1 for the whole call.
//
// Channels and mutexes: Go's ready() and runnext (sync/go_channel.hpp, go_mutex.hpp)
//
//   A task that receives from an empty channel, sends to a full one, or finds a mutex locked
//   (after spinning, Go's rule: only while some other P runs and nothing waits in its own queue)
//   parks: the runtime saves its fiber and lets the channel's lock go from the switch action, and
//   the M looks for its next task at once. The task that sends it a value (or receives its, or
//   unlocks the mutex) readies it as Go's ready() does: into the readier's P's runnext, where it
//   runs as soon as the readier parks, yields or ends, inheriting the readier's time slice
//   (inheritTime): a ping-pong pair then runs back to back on one P, never queued, never stolen
//   before a thief's 3 µs grace (ready_runnext counts such readies, ready_runnext_stolen those a
//   thief took anyway; --runnext off shows what runnext saves: the partner goes to the local
//   queue, where the other P's spinning M steals it at once).
//
// Preemption at safe points (--preempt safepoint, the default; runtime/preemption.hpp)
//
//   The system monitor looks at every busy P each round (10 ms apart while a P is busy, shorter
//   while it retakes Ps from calls) and marks a P whose schedtick has not moved for 10 ms
//   (Go's forcePreemptNS, retake and preemptone). The task running there yields at its next safe
//   point, to the back of the global queue (Go's gopreempt_m), and the P runs the others. A
//   task taken from runnext inherits the slice, so a ping-pong pair shares one, and a pair that
//   would otherwise hold its P for ever is preempted after 10 ms (tests: preemption_test).
//   Safe points are what Go had before 1.14: checks the code calls (spawn, WaitGroup::go, every
//   channel and mutex operation, and the workloads' loops every 1024 iterations:
//   workloads/spin.hpp), where Go checks in every function's prologue. Go 1.14+ also stops a
//   goroutine in a loop without calls, by signal (asynchronous preemption); schedlab does not:
//   interrupting a C++ fiber at an arbitrary instruction is unsafe (Go's compiler records where
//   every instruction may be stopped; a C++ compiler does not), so a loop without a safe point
//   keeps its P until it ends, as in Go 1.13. What looking costs: the monitor's rounds, 10 ms
//   apart while tasks run, ~10-15 µs of CPU each on the project's VM (docs/schedulers.md has the figures);
//   the tick it reads is the one the 1-in-61 check already keeps, so the per-task path is as
//   before.
//
// The network poller (runtime/poller.hpp; Go's netpoll in findRunnable, stopm and sysmon)
//
//   A task waiting for a socket (api.hpp: Socket) parks on the runtime's epoll poller and holds
//   no thread: its M looks for other work at once. Three places poll, as in Go:
//   - an M holding P that found nothing in its queues or the global queue polls without
//     blocking before it steals (step 4), and runs the first task it readied; the others go to
//     P's local queue, where thieves see them, with a wake-up as after any push (injectglist);
//   - an M with nothing to do (step 6), when a task waits on a socket and no other M is in
//     the poller, blocks in epoll_wait instead of parking (poller_m_; lastpoll_ is 0 meanwhile,
//     which is how the others know to skip their non-blocking poll). A ready socket returns it:
//     it takes an idle P if one is free and runs the readied tasks, else queues them globally
//     and goes back to the poller. It is an idle M all the while (idle_ns, parks);
//   - the system monitor polls when nobody has blocked in the poller for 10 ms (netpoll, called
//     from SystemMonitor::tick), so that a ready socket is seen while every P runs tasks that
//     never wait; it keeps its rounds while tasks wait on sockets with no M in the poller, and
//     a worker that sees such tasks wakes it from its deep sleep (note_network_wait).
//   New work while the only idle M is blocked in the poller: startm hands it the P and breaks
//   its epoll_wait (Poller::wake, an eventfd: Go's netpollBreak). Go starts a new M instead and
//   leaves the poller's M blocked; we wake the one we have, so that waiting on sockets costs no
//   thread at all: the Ms are at most the Ps plus the one in the poller, however many tasks
//   wait (tests: StealHalfNetpoll). --netpoll off: the same waits are poll(2) inside blocking(),
//   so each waiting task holds an M and its P is handed on: a thread per waiting connection.
//
// Deviations from Go, each for a stated reason
//   - The local queue is one 64-bit word for head, tail and a version (run_queue.hpp), because
//     the owner pops at the tail while thieves take batches at the head.
//   - runnext: Go's owner pays a CAS for every put and every take so that thieves may take it;
//     here the owner uses plain stores and a load, and a thief pays a process-wide barrier
//     (runnext.hpp). Measured: ~15 instructions per task for the protocol (callgrind, docs/schedulers.md),
//     no locked instruction. The thief's 3 µs sleep is usleep(3), as Go's: on Linux with the
//     default 50 µs timer slack it lasts ~95 µs on the project's VM, for Go too.
//   - An M that gives up its P lists itself idle in the same critical section. Go lists it
//     later (stopm), and a wakep in between finds an idle P but no idle M and creates a thread;
//     we create threads only when every existing one is busy or blocked.
//   - Which stolen task the thief runs at once depends on its local order: the newest under
//     FIFO (Go's runqsteal), the oldest under LIFO. Go's choice under a LIFO owner would run the
//     batch newest to oldest and start the oldest, likely largest, task last: on loops one-long
//     the thief ran the long task after 99 short ones and idled as much as fair.
//   - The system monitor retakes Ps from calls, polls the network (netpoll) and preempts
//     tasks running longer than 10 ms: Go's also forces garbage collections. With --preempt off
//     it sleeps deeply when no P is in a call and no task waits on a socket (once backed off),
//     where Go's sleeps deeply only when every P is idle (with preemption it does as Go); and after a thread's call woke it, it returns at
//     once to its 10 ms rounds if the calls end before it has retaken anything, where Go's bets
//     50 rounds of 20 µs on them (sysmon.hpp says why: a round costs ~10-15 µs of CPU on a VM,
//     and steal-half's monitor is woken at the start of nearly every repetition). Go's
//     syscalltick advances when a call ends (exitsyscall) and when its P is retaken; here it
//     advances when a call starts: either way each call has its own number, which is all retake
//     compares.
//   - No timers, no GC, and preemption only at safe points (above). A pair of tasks
//     respawning each other through runnext (or a LIFO tail) keeps running before the older
//     tasks of the same P; thieves are what get the rest run. The 1-in-61 global check counts
//     schedule ticks, and, as in Go, a task taken from runnext inherits its readier's tick
//     (inheritTime): a runnext ping-pong never ticks. Go relies on sysmon preempting that
//     inherited time slice after 10 ms, and so does steal-half, at the pair's next safe point
//     (a spawn, a channel operation); with --preempt off the global queue waits for the
//     ping-pong to end, while a ping-pong through the local queue (--runnext off, or a LIFO
//     tail) ticks and is interrupted by the check.
//     --runnext-tick count makes runnext pops tick too (the ablation; steal_half_test shows
//     which mechanism feeds the global queue in each case).
//   - The 1-in-61 check is a countdown to the next global-first look, reset at each look, where
//     Go tests schedtick % 61 == 0 at every schedule (--global-check N takes any N, and a
//     division by a runtime N would cost more than the rest of the fast path). Both look once
//     every 61 ticks, at the same phase. They differ while schedtick stands still at a multiple
//     of 61, during a chain of inherited runnext time slices: Go then looks at the global queue
//     at every schedule of the chain, and the countdown looks once. Which of the two a runnext
//     ping-pong meets in Go depends on where schedtick happened to stand when it began; the
//     countdown makes the ping-pong's fate independent of that accident (GlobalQueueStarvation
//     shows it starving the global queue, deterministically).
//
// Stealing off (--steal-amount none, the ablation of the stealing claims): step 5 takes nothing
// and a spinner's last look sees only the global queue, so a P's own queue and runnext are run by
// that P alone, and work moves between Ps only through the global queue (the root, overflows,
// tasks back from calls). Everything else stays: wake-ups after every put, spinning, parking.
//
// Spinning off (--spinning off, the ablation of the spinning claim): an M that finds no work
// in its look at the queues and one round of steals parks at once, without joining nmspinning
// (unless need_spinning asks it to look once more); so nmspinning stays 0 and every new
// runnable task wakes a parked M while a P is idle.
#include "steal_half.hpp"

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
#include "process_barrier.hpp"
#include "processor.hpp"
#include "sysmon.hpp"

namespace schedlab {
namespace {

constexpr int kStealPasses = 4;  // Go: stealTries = 4
// Go's sysmon polls the network when nobody has blocked in the poller for this long ("poll
// network if not polled for more than 10ms", proc.go).
constexpr std::uint64_t kSysmonNetpollNs = 10'000'000;

// How long a thief leaves a running victim's runnext alone before taking it (Go's runqgrab:
// usleep(3), "a sync chan send/recv takes ~50ns ..., so 3us gives ~50x overshoot"). The kernel
// decides how long the sleep really lasts: ~95 µs on the project's VM with Linux's default
// 50 µs timer slack (docs/platform.md), as for Go's own usleep(3) there.
constexpr useconds_t kRunnextGraceUs = 3;

// The fields of Go's m that this policy needs, one per worker thread.
struct MState {
  Processor* p = nullptr;          // the P held; read and written by this M only
  bool spinning = false;           // this M only
  std::uint64_t spin_start = 0;    // this M only
  Processor* syscall_p = nullptr;  // the P of the blocking call in progress (Go's m.oldp); this M only
  Processor* next_p = nullptr;     // a P handed over by startm; guarded by the sched lock
  bool next_spinning = false;      // guarded by the sched lock
  bool listed_idle = false;        // on the idle M list; guarded by the sched lock
};

class StealHalfPolicy final : public Policy, private SystemMonitor::Host {
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
    preempt_ = runtime.config().preempt;
    // The monitor retakes Ps from calls (--handoff lazy), polls the network (--netpoll on) and
    // preempts tasks that run 10 ms (--preempt safepoint); it sleeps until the first call,
    // network wait or busy P.
    if (config_.handoff == HandOff::lazy || runtime.config().netpoll || preempt_) {
      SystemMonitor::Host& host = *this;  // a private base, converted where it is accessible
      SysmonTiming timing = config_.sysmon;
      timing.preempt = preempt_;
      sysmon_ = std::make_unique<SystemMonitor>(host, procs_, timing);
      sysmon_->start();
    }
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

  // Go's ready() for a task parked on a channel or mutex: as any other, into the readier's P's
  // runnext (runqput with next=true), and counted there; a thief that takes it later is counted
  // too (steal_runnext).
  void submit_woken(Task& t, Worker* from) override {
    if (Processor* p = from != nullptr ? state(*from).p : nullptr; p != nullptr && config_.runnext) {
      from->stats.add(Counter::ready_runnext);
      p->last_woken.store(&t, std::memory_order_relaxed);
    }
    submit(t, from);
  }

  // Go's goschedImpl and gopreempt_m: the task goes to the back of the global queue, and an M
  // is woken if a P is idle (wakep).
  void submit_yield(Task& t, Worker* from) override {
    push_global(t, from);
    wake_if_needed(from);
  }

  // The monitor marks a P whose slice (schedtick) has lasted 10 ms; the task running there acts
  // on the mark while that slice is still the P's, once (see runtime/preemption.hpp).
  bool take_preempt_request(Worker& w) override {
    Processor* p = state(w).p;
    if (p == nullptr) return false;  // in a blocking call: the monitor deals with the P
    const std::uint32_t tick = p->read_tick();
    if (p->preempt_tick.load(std::memory_order_relaxed) != tick) return false;
    return p->preempt_tick.exchange(kNoPreemptMark, std::memory_order_relaxed) == tick;
  }
  bool preempts_itself() const override { return true; }
  static constexpr bool kOwnTimeSlices = true;  // schedtick, with runnext's inheritTime

  // Go's runtime_canSpin: 4 rounds, only if some other P runs (GOMAXPROCS > npidle +
  // nmspinning + 1) and nothing waits in this P's own queue.
  bool may_spin(Worker& w, int iteration) const override {
    constexpr int kActiveSpin = 4;  // Go: active_spin
    if (iteration >= kActiveSpin) return false;
    if (nprocs_ <= npidle_.load(std::memory_order_relaxed) + nmspinning_.load(std::memory_order_relaxed) + 1) return false;
    const Processor* p = static_cast<const MState*>(w.policy_state)->p;
    return p != nullptr && p->queues_empty();
  }

  // Executed by w's thread only. Go's schedule(): find a task, stop spinning if we were. The
  // common case (a task in runnext or the local queue, no global check due) stays in this
  // small function; everything else is in find_runnable.
  Task* next(Worker& w) override {
    MState& ms = state(w);
    Processor* p = ms.p;
    if (p != nullptr && !ms.spinning && p->until_global_check != 0) [[likely]] {
      Task* t = p->runnext.take_or_mark();
      bool inherit = false;
      if (t != nullptr) {
        if (RunNext::marked(t)) [[unlikely]] return next_after_thief(w, *p, t);
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

  // next() when a thief was at work on runnext as the owner took it (runnext.hpp): out of line,
  // so that next() keeps no register alive across a call.
  [[gnu::noinline]] Task* next_after_thief(Worker& w, Processor& p, Task* marked) {
    Task* t = p.runnext.settle(RunNext::unmarked(marked));
    if (t == nullptr) return next_slow(w);  // the thief took it
    w.stats.add(Counter::local_pops);
    if (!config_.runnext_inherits_tick) tick(p);
    return t;
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
    p.tick();
    --p.until_global_check;
  }

  // Called once, after the last run, and by a failing runtime before it waits for its workers.
  void shutdown() override {
    if (sysmon_) sysmon_->stop();  // no retake, and so no hand-off, after this
    stopping_.store(true, std::memory_order_seq_cst);
    std::lock_guard lock(sched_mutex_);
    for (Worker* m : idle_ms_) m->parker.unpark();
    if (poller_m_ != nullptr) runtime_->poller()->wake();
  }

  // The workers poll the runtime's poller themselves (see "The network poller" above).
  NetpollMode netpoll_mode() const override { return NetpollMode::integrated; }
  // A task parked on a socket: the monitor watches it from now on (its netpoll), so that a
  // ready socket is seen while every P runs other tasks. A load, unless the monitor sleeps
  // deeply; the poller counted the waiter (seq_cst) before this.
  void on_network_wait(Worker&) override {
    if (sysmon_) sysmon_->note_network_wait();
  }

  // Executed by w's thread, holding a P, as its task enters schedlab::blocking(f).
  void blocking_begin(Worker& w) override {
    if (config_.handoff == HandOff::off) return;
    MState& ms = state(w);
    Processor* p = ms.p;
    SCHEDLAB_ASSERT(p != nullptr && ms.syscall_p == nullptr,
                    "a task enters a blocking call holding its P, and blocking calls do not nest");
    ms.syscall_p = p;
    ms.p = nullptr;
    w.proc = Worker::kNoProc;
    if (config_.handoff == HandOff::eager) {
      handoff(*p, &w);  // Go's entersyscallblock
      return;
    }
    // Go's reentersyscall: keep the P, marked as in a call. No lock and no wake (unless the
    // monitor sleeps deeply): an XCHG, as Go's atomic.Store of the status, and a load.
    p->syscalltick.store(p->syscalltick.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    p->status.store(ProcStatus::in_call, std::memory_order_seq_cst);
    sysmon_->note_call_entered();
  }

  // Executed by w's thread, on the task's fiber, as f returns: the task needs a P again.
  void blocking_end(Worker& w) override {
    if (config_.handoff == HandOff::off) return;
    MState& ms = state(w);
    Processor* old = ms.syscall_p;
    if (config_.handoff == HandOff::lazy) {
      // Go's exitsyscallfast: the same P back with one CAS, unless the monitor retook it.
      ProcStatus expected = ProcStatus::in_call;
      if (old->status.compare_exchange_strong(expected, ProcStatus::held, std::memory_order_acq_rel)) {
        ms.syscall_p = nullptr;
        acquire(w, *old);
        return;
      }
    }
    ms.syscall_p = nullptr;
    // The P went to another thread (or to the idle list): take it back if it is idle, else any
    // idle P (Go's exitsyscallfast_pidle), ...
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
    // ... else the task waits in the global queue and this thread becomes a spare M (Go's
    // exitsyscall0).
    runtime_->suspend_current([this](Task& t, Worker& here) {
      runtime_->mark_runnable(t);
      push_global(t, &here);
      wake_if_needed(&here);
    });
  }

  void add_counters(CounterSet& c) const override {
    c[Counter::handoffs] += monitor_handoffs_.load(std::memory_order_relaxed);
    if (sysmon_) {
      c[Counter::retakes] += sysmon_->retakes();
      c[Counter::sysmon_wakeups] += sysmon_->wakeups();
      c[Counter::sysmon_cpu_ns] += sysmon_->cpu_ns();
    }
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
    if (const Poller* poller = runtime_->poller()) {
      out.append(", tasks parked on sockets ").append(std::to_string(poller->waiters()));
      out.append(", M in the poller ").append(poller_m_ != nullptr ? name("M", poller_m_->index()) : std::string("none"));
    }
    const unsigned nms = runtime_->worker_count();
    for (const auto& p : procs_) {
      std::string where = p->idle.load() ? "idle" : "off the idle list, not yet handed to an M";
      for (unsigned i = 0; i < nms; ++i) {
        if (mstates_[i].p == p.get()) where = "held by " + name("M", i);
        if (mstates_[i].next_p == p.get()) where = "handed to " + name("M", i) + " (next_p)";
      }
      if (p->status.load() == ProcStatus::in_call) where = "kept by a thread in a blocking call";
      out.append("\n  ").append(proc(p.get())).append(": ").append(where);
      out.append(", runnext ").append(p->runnext.peek() != nullptr ? "1 task" : "empty");
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

  // ---- the system monitor's view (sysmon.hpp) ------------------------------------------------

  bool someone_looking() const override {
    return nmspinning_.load(std::memory_order_seq_cst) + npidle_.load(std::memory_order_seq_cst) > 0;
  }
  // Some P is held (running tasks or looking for them): the monitor keeps its rounds to preempt.
  // seq_cst, against note_busy() in pidle_remove_locked (sysmon.hpp).
  bool any_busy() const override { return npidle_.load(std::memory_order_seq_cst) < nprocs_; }
  void handoff_retaken(Processor& p) override { handoff(p, nullptr); }

  // Go's sysmon, each round: "poll network if not polled for more than 10ms" (proc.go): when
  // no M has blocked in the poller for kSysmonNetpollNs, one non-blocking poll, its tasks to
  // the global queue. So a socket's edge is seen while every P runs tasks that never wait.
  // Executed by the monitor's thread (no worker, no P).
  bool netpoll(std::uint64_t now) override {
    Poller* poller = runtime_->poller();
    std::uint64_t last = lastpoll_.load(std::memory_order_seq_cst);
    if (poller != nullptr && last != 0 && now >= last + kSysmonNetpollNs &&
        lastpoll_.compare_exchange_strong(last, now, std::memory_order_seq_cst)) {
      TaskList ready = poller->poll(0);
      inject(nullptr, nullptr, ready);
    }
    return network_waiting();
  }
  bool network_waiting() const override {
    const Poller* poller = runtime_->poller();
    return poller != nullptr && poller->waiters() > 0 && lastpoll_.load(std::memory_order_seq_cst) != 0;
  }

  // Executed by w. A P is held by one M at a time, and never while it is listed idle.
  void acquire(Worker& w, Processor& p) {
    SCHEDLAB_ASSERT(state(w).p == nullptr, "an M holds at most one P");
    SCHEDLAB_ASSERT(!p.idle.load(std::memory_order_relaxed), "a P is taken off the idle list before an M holds it");
    state(w).p = &p;
    w.proc = p.id;
  }

  // ---- where a task goes ----------------------------------------------------------------

  // Go's newproc and ready: runqput, then wakep, also when the task only filled runnext (a
  // thief may take runnext; and the P's own M may be about to run something long).
  void submit(Task& t, Worker* from) {
    Processor* p = from != nullptr ? state(*from).p : nullptr;
    if (p != nullptr) {
      push_local(*from, *p, t);
    } else {
      push_global(t, from);
    }
    wake_if_needed(from);
  }

  // Executed by the M holding p. Go's runqput: the new task takes runnext and the one it
  // displaces goes to runq.
  void push_local(Worker& w, Processor& p, Task& t) {
    count_push(&w, Counter::local_pushes);
    Task* queued = &t;
    if (config_.runnext) {
      queued = p.runnext.put(t);
      if (queued == nullptr) return;
    }
    push_runq(w, p, *queued);
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
    count_push(from, Counter::global_pushes);  // before the push (Policy::count_push)
    {
      std::lock_guard lock(sched_mutex_);
      global_.push_back(t);
      global_size_.fetch_add(1, std::memory_order_seq_cst);
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
      bool in_poller = false;
      bool at_max_threads = false;
      {
        std::lock_guard lock(sched_mutex_);
        m = idle_m_locked(&in_poller);
        if (m != nullptr) handover_locked(*m, p, spinning);
      }
      // Every M is busy or blocked in a call: start one more. It lists itself idle, and the
      // next iteration hands it p (or another idle M turns up first).
      if (m == nullptr && runtime_->add_worker() == nullptr) {
        // At --max-threads. p's work stays queued for a busy P, or for a thread coming back
        // from its call, which takes an idle P first. But that thread may have come back
        // already: the monitor retook p while its thread was in a call, and the thread, finding
        // no P, queued its task and listed itself idle since we looked. Look again under the lock
        // that its stopm takes to list itself and to look for an idle P with work: either we see
        // it listed, or it sees p idle (tests/stress: RandomSpawnTrees, max_threads_eq_threads).
        std::lock_guard lock(sched_mutex_);
        m = idle_m_locked(&in_poller);
        if (m != nullptr) {
          handover_locked(*m, p, spinning);
        } else {
          pidleput_locked(p);
          if (spinning) nmspinning_decrement();
          at_max_threads = true;
        }
      }
      if (at_max_threads) return;
      if (m != nullptr) {
        wake(from, [this, m, in_poller] {
          if (in_poller) {
            runtime_->poller()->wake();
          } else {
            m->parker.unpark();
          }
        });
        return;
      }
    }
  }

  // An idle M to hand a P to: a parked one, else the one blocked in the poller, which takes it
  // where Go would start a thread (*in_poller: wake it through the poller). Sched lock held.
  Worker* idle_m_locked(bool* in_poller) {
    *in_poller = false;
    if (Worker* m = mget_locked()) return m;
    if (poller_m_ != nullptr && state(*poller_m_).next_p == nullptr) {
      *in_poller = true;
      return poller_m_;
    }
    return nullptr;
  }

  // Gives p to the idle M m, whom the caller then unparks. Sched lock held.
  void handover_locked(Worker& m, Processor& p, bool spinning) {
    MState& ms = state(m);
    ms.next_p = &p;
    ms.next_spinning = spinning;
  }

  // Go's handoffp: p was released by `from` entering a blocking call (--handoff eager), or
  // retaken by the monitor (from == nullptr). Whoever calls it is p's only holder.
  void handoff(Processor& p, Worker* from) {
    auto count = [&] {
      if (from != nullptr) {
        from->stats.add(Counter::handoffs);
      } else {
        monitor_handoffs_.fetch_add(1, std::memory_order_relaxed);
      }
    };
    if (!p.queues_empty() || global_size_.load(std::memory_order_seq_cst) != 0) {
      count();
      startm(p, /*spinning=*/false, from);
      return;
    }
    // No work for p itself; if nobody is looking for work anywhere, let p's new M look (as a
    // spinner: with spinning off nobody looks, and p just goes idle).
    std::uint32_t zero = 0;
    if (config_.spinning && npidle_.load(std::memory_order_seq_cst) == 0 &&
        nmspinning_.compare_exchange_strong(zero, 1, std::memory_order_seq_cst)) {
      count();
      startm(p, /*spinning=*/true, from);
      return;
    }
    {
      std::lock_guard lock(sched_mutex_);
      // A task queued globally since the look above (a thread back from its call found no P)
      // must not wait behind an idle P: its submitter saw no idle P and woke nobody (Go
      // rechecks sched.runqsize under the lock for the same reason).
      if (global_.empty()) {
        pidleput_locked(p);
        return;
      }
    }
    count();
    startm(p, /*spinning=*/false, from);
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
    if (Task* t = p.runnext.take()) {
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
    if (Task* t = poll_network(w, p)) return t;
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

  // A look at every queue a spinner could take from (Go: runqempty of every P, runnext included
  // where a thief may take it).
  bool work_visible() const {
    if (global_size_.load(std::memory_order_seq_cst) != 0) return true;
    if (!steals()) return false;  // nothing another P holds is ours to take
    for (const auto& q : procs_) {
      if (q->idle.load(std::memory_order_relaxed)) continue;
      if (!q->runq.empty() || (stealable_runnext() && q->runnext.peek() != nullptr)) return true;
    }
    return false;
  }

  // --steal-amount none, the ablation of the stealing claims: thieves never look at another P.
  bool steals() const { return config_.steal != StealAmount::none; }

  // Thieves may take runnext (runnext.hpp: only with membarrier, which every kernel since Linux
  // 4.14 offers; without it, runnext stays its owner's, as with --steal-runnext off).
  bool stealable_runnext() const { return steals() && config_.runnext && config_.steal_runnext && !fenced_pushes_; }

  // Executed by w holding p, with p's queue empty. Go's stealWork, `passes` rounds; on the last,
  // a victim whose queue is empty may lose its runnext.
  Task* steal_work(Worker& w, Processor& p, int passes) {
    if (!steals()) return nullptr;
    for (int pass = 0; pass < passes; ++pass) {
      const bool last = pass + 1 == passes;
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
        if (last && stealable_runnext()) {
          if (Task* t = steal_runnext(w, victim)) return t;
        }
      }
    }
    return nullptr;
  }

  // Go's runqgrab, its runnext branch: reached only when the victim's queue was empty. A running
  // victim gets a grace period first: the task it just readied is likely the next it runs, and
  // taking it would move it between threads for nothing. A victim whose thread is in a call
  // (in_call) gets none.
  Task* steal_runnext(Worker& w, Processor& victim) {
    Task* seen = victim.runnext.peek();
    if (seen == nullptr) return nullptr;
    if (victim.status.load(std::memory_order_relaxed) == ProcStatus::held) {
      ::usleep(kRunnextGraceUs);
      if (victim.runnext.peek() != seen) return nullptr;  // run (or replaced) meanwhile
    }
    Task* t = victim.runnext.steal(seen);
    if (t == nullptr) return nullptr;
    w.stats.add(Counter::steals);
    w.stats.add(Counter::tasks_stolen);
    if (t == victim.last_woken.load(std::memory_order_relaxed)) w.stats.add(Counter::ready_runnext_stolen);
    if (w.tracing()) {
      const std::uint64_t now = now_ns();
      w.trace.add(TraceKind::steal, now, now, 1);
    }
    return t;
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
      bool poll = false;
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
        poll = wants_poller_locked();
        if (poll) {
          // Go's findRunnable: block in netpoll instead of stopm, if nobody else does.
          if (ms.listed_idle) m_unlist_locked(w);
          poller_m_ = &w;
          lastpoll_.store(0, std::memory_order_seq_cst);
        } else if (!ms.listed_idle) {
          mput_locked(w);
        }
      }
      if (!poll) {
        w.park();
      } else if (block_in_poller(w)) {
        return true;
      }
    }
  }

  // ---- the network poller (see "The network poller" above) --------------------------------

  // A task waits on a socket and no M is blocked in the poller. Sched lock held.
  bool wants_poller_locked() const {
    const Poller* poller = runtime_->poller();
    return poller != nullptr && poller_m_ == nullptr && poller->waiters() > 0;
  }

  // Executed by w, holding p, with nothing in p's queues or the global queue. Go's netpoll(0)
  // in findRunnable, "only an optimization before we resort to stealing": skipped when nobody
  // waits on a socket or an M is blocked in the poller (it sees the edges itself).
  Task* poll_network(Worker& w, Processor& p) {
    Poller* poller = runtime_->poller();
    if (poller == nullptr || poller->waiters() == 0 || lastpoll_.load(std::memory_order_relaxed) == 0) {
      return nullptr;
    }
    // Tasks wait on sockets and nobody blocks in the poller: the monitor must watch them.
    if (sysmon_) sysmon_->note_network_wait();
    TaskList ready = poller->poll(0);
    Task* first = ready.pop_front();
    if (first != nullptr) {
      runtime_->mark_runnable(*first);  // runnable since this poll found it; run at once
      inject(&w, &p, ready);
    }
    return first;
  }

  // Executed by w, holding no P, as the one M blocked in the poller (poller_m_ is w). Go's
  // findRunnable from "Poll network until next timer": block until a socket is ready or startm
  // hands w a P (and breaks the poll), then take that P, or an idle one if the poll readied
  // tasks. Returns true holding a P; false without one, the readied tasks queued globally.
  bool block_in_poller(Worker& w) {
    MState& ms = state(w);
    w.idle_begin();
    TaskList ready = runtime_->poller()->poll(-1);
    w.idle_end();
    Processor* p = nullptr;
    {
      std::lock_guard lock(sched_mutex_);
      SCHEDLAB_ASSERT(poller_m_ == &w, "the M leaving the poller is the one that blocked in it");
      poller_m_ = nullptr;
      lastpoll_.store(now_ns(), std::memory_order_seq_cst);
      // Nobody blocks in the poller now: if tasks still wait on sockets, the monitor watches.
      if (sysmon_ && runtime_->poller()->waiters() > 0) sysmon_->note_network_wait();
      if (ms.next_p != nullptr) {
        p = std::exchange(ms.next_p, nullptr);
        ms.spinning = ms.next_spinning;  // counted in nmspinning by the wakep that chose us
        if (ms.spinning) ms.spin_start = now_ns();
      } else if (!ready.empty()) {
        p = pidleget_locked();
        ms.spinning = false;
      }
      if (p != nullptr) acquire(w, *p);
    }
    inject(&w, p, ready);
    return p != nullptr;
  }

  // Go's injectglist: tasks the poller readied. Holding p (from holds it): into p's queue,
  // where the caller's next look and the thieves find them; without a P: the global queue. Then
  // a wake-up, as after any push a thief can see.
  void inject(Worker* from, Processor* p, TaskList& ready) {
    if (ready.empty()) return;
    while (Task* t = ready.pop_front()) {
      runtime_->mark_runnable(*t);
      if (p != nullptr) {
        count_push(from, Counter::local_pushes);
        push_runq(*from, *p, *t);
      } else {
        push_global(*t, from);
      }
    }
    wake_if_needed(from);
  }

 private:
  // ---- idle lists (Go's pidle and midle); the sched lock is held ---------------------------

  // An idle P with tasks in its own queues (left there by a hand-off that found no thread),
  // else any idle P if the global queue has tasks; nullptr if neither.
  Processor* idle_proc_with_work_locked() {
    for (Processor* p = idle_procs_; p != nullptr; p = p->idle_next) {
      if (!p->queues_empty()) return p;
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
    // The first busy P: a monitor that preempts wakes from its deep sleep (sysmon.hpp).
    if (before == nprocs_ && preempt_ && sysmon_) sysmon_->note_busy();
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
  bool preempt_ = false;  // --preempt safepoint (RuntimeConfig::preempt); set by attach()
  const std::uint32_t nprocs_;
  const bool fenced_pushes_;  // membarrier unavailable: every push carries the barrier itself
  std::vector<std::unique_ptr<Processor>> procs_;
  std::vector<std::uint32_t> coprimes_;
  std::unique_ptr<MState[]> mstates_;
  std::unique_ptr<SystemMonitor> sysmon_;  // --handoff lazy or --netpoll on; after procs_, which it reads

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
  // The network poller (see the design notes). Go's sched.lastpoll: 0 while an M is blocked in
  // the poller, else when one last left it (or sysmon last polled); set under the sched lock,
  // read without it as Go reads it.
  std::atomic<std::uint64_t> lastpoll_{now_ns()};
  Worker* poller_m_ = nullptr;  // the M blocked in the poller; guarded by sched_mutex_
  std::atomic<std::uint64_t> monitor_handoffs_{0};  // hand-offs of Ps the monitor retook
};

}  // namespace

std::unique_ptr<Scheduler> make_steal_half(const RuntimeConfig& runtime,
                                           const StealHalfConfig& config) {
  RuntimeConfig with_spares = runtime;
  with_spares.max_threads = config.max_threads;
  return make_policy_runtime(std::make_unique<StealHalfPolicy>(runtime.threads, config), with_spares);
}

}  // namespace schedlab
