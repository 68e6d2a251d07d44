#include "runtime.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "../api.hpp"
#include "../assert.hpp"
#include "../cpu_pin.hpp"
#include "../memory_budget.hpp"
#include "fiber_guard.hpp"

namespace schedlab {
namespace {
thread_local Worker* tls_worker = nullptr;

// What one fiber is charged against the memory budget: the page its stack commits and its
// Fiber record (memory_budget.hpp has the measurement).
std::uint64_t fiber_charge_bytes() {
  return static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) + sizeof(Fiber);
}

std::string mib(std::uint64_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; }
}  // namespace

FiberRuntime::FiberCharge::~FiberCharge() { memory_release(fibers.load() * fiber_charge_bytes()); }

Worker* current_worker_or_null() noexcept {
  // The empty asm keeps calls to this function from being merged or hoisted across a fiber
  // switch, so each call reads the thread_local of the thread running it now.
  asm volatile("" ::: "memory");
  return tls_worker;
}

FiberRuntime::FiberRuntime(std::unique_ptr<Policy> policy, RuntimeConfig config)
    : config_([&] {
        if (config.threads == 0) throw std::invalid_argument("threads must be at least 1");
        if (config.max_threads < config.threads) config.max_threads = config.threads;
        return config;
      }()),
      policy_(std::move(policy)),
      pin_cpus_(config_.pin ? allowed_cpus() : std::vector<int>{}),
      stacks_(config_.stack),
      workers_(new std::unique_ptr<Worker>[config_.max_threads]) {
  finished_tasks_need_join_ = false;  // a finished task's fiber went back to a pool already
  failure_.reserve(kResourceMessageRoom);
  install_overflow_handler();
  policy_->attach(*this);
}

void FiberRuntime::start() {
  for (unsigned i = 0; i < config_.threads; ++i) {
    if (add_worker() == nullptr) {  // a thread could not be started (fail() says why)
      stop_and_join_workers();
      throw ResourceError(failure_);
    }
  }
  // Per-thread counters attach to worker tids before the first run: wait until every initial
  // worker has published its own (a few microseconds, once per scheduler).
  for (unsigned i = 0; i < config_.threads; ++i) {
    while (workers_[i]->tid() == 0) std::this_thread::yield();
  }
  if (config_.preempt && !policy_->preempts_itself()) {
    preempt_monitor_ = std::make_unique<PreemptMonitor>(*this);
    try {
      preempt_monitor_->start();
    } catch (const std::system_error& e) {
      stop_and_join_workers();
      throw worker_thread_refused("(the preemption monitor)", e.code().value());
    }
  }
}

FiberRuntime::~FiberRuntime() {
  stop_and_join_workers();
  if constexpr (kAssertionsOn) {
    // Every worker has exited (a worker stopped by shutdown may not have gone idle after its
    // last task, so its batch is folded in here): every task spawned has finished, unless a
    // deadlock or a resource failure leaked the stuck ones.
    for (unsigned i = 0; i < worker_count(); ++i) live_.flush(workers_[i]->live_batch);
    SCHEDLAB_ASSERT(deadlocked_ || failed_.load() || live_.settled() == 0, "no task outlives the last run");
  }
}

void FiberRuntime::stop_and_join_workers() noexcept {
  if (preempt_monitor_) preempt_monitor_->stop();  // it reads the workers
  policy_->shutdown();
  for (unsigned i = 0; i < worker_count(); ++i) {
    if (workers_[i]->thread_.joinable()) workers_[i]->thread_.join();
  }
}

Worker* FiberRuntime::add_worker() {
  std::lock_guard lock(add_worker_mutex_);
  const unsigned i = worker_count_.load(std::memory_order_relaxed);
  if (i >= config_.max_threads || failed_.load(std::memory_order_acquire)) return nullptr;
  workers_[i] = std::make_unique<Worker>(*this, live_, i);
  Worker& w = *workers_[i];
  w.stats.add(Counter::threads_created);
  if (config_.latency) w.delays = std::make_unique<LatencyHistogram>();
  if (trace_cap_per_worker_ != 0) {
    w.trace.reset(trace_cap_per_worker_);
    w.tracing_flag.store(true, std::memory_order_release);
  }
  w.proc = w.index();  // the default processor (policy.hpp); the policy may change it
  policy_->on_worker_added(w);
  worker_count_.store(i + 1, std::memory_order_release);
  // A worker may be unparked before its thread runs: the parker keeps the permit.
  threads_running_.fetch_add(1, std::memory_order_relaxed);
  try {
    w.thread_ = std::thread([this, &w] { worker_main(w); });
  } catch (const std::system_error& e) {
    // The policy already counts w: the runtime cannot run as configured, so it fails (a policy
    // treats nullptr as "no more threads", which keeps its own state consistent meanwhile).
    threads_running_.fetch_sub(1, std::memory_order_relaxed);
    const std::string which = i < config_.threads ? std::to_string(i + 1) + " of " + std::to_string(config_.threads)
                                                  : std::to_string(i + 1) + " (beyond --threads " +
                                                        std::to_string(config_.threads) + ", for a blocking call)";
    fail(worker_thread_refused(which, e.code().value()).what());
    return nullptr;
  }
  return &w;
}

// Executed on the worker's own thread, on its native stack.
void FiberRuntime::worker_main(Worker& w) noexcept {
  tls_worker = &w;
  arm_overflow_stack();
  // Pinned before the tid is published: the constructor waits for the tids, so a built runtime's
  // workers are on their CPUs. The tid is published whatever happens, or the constructor would
  // wait for ever.
  bool ready = false;
  try {
    w.native_ = Fiber::for_current_thread();
    ready = pin(w);
  } catch (const std::exception& e) {  // memory for the fiber record or pin's message, under ulimit -v
    fail_worker_start(w, "memory to start", e.what());
  }
  w.tid_.store(static_cast<pid_t>(::syscall(SYS_gettid)), std::memory_order_release);
  Worker* wp = &w;
  // Not ready: fail() has said why, and the worker leaves at once, as one that gets no first
  // stack does.
  if (Fiber* first = ready ? take_idle_fiber(w) : nullptr) {
    switch_fiber(*w.native_, *first, [wp, first] { wp->current_fiber_ = first; });
  }
  // Shutdown, or a failure. Every loop fiber that was running on this thread parked itself in
  // this pool; let each return from its entry function so that Boost releases its stack.
  while (Fiber* f = w.idle_fibers_.pop()) {
    f->request_exit(*w.native_);
    switch_fiber(*w.native_, *f, [wp, f] { wp->current_fiber_ = f; });
    delete f;
  }
  delete w.native_;
  w.native_ = nullptr;
  release_overflow_stack();
  threads_running_.fetch_sub(1, std::memory_order_release);
}

bool FiberRuntime::pin(Worker& w) {
  if (!config_.pin) return true;
  // A worker beyond --threads (a hand-off thread) gets the workers' shared set (pinned_cpus).
  const std::string error = pin_worker(pin_cpus_, w.index(), config_.threads,
                                       "worker thread " + std::to_string(w.index() + 1));
  if (!error.empty()) {
    fail(error);
    return false;
  }
  return true;
}

// Entry of every pooled fiber: run the schedule loop until shutdown, then wait in the pool for
// the exit request (see worker_main).
void FiberRuntime::fiber_entry(Fiber& self) {
  current_worker().runtime_->schedule_loop();
  if (self.exit_requested()) return;
  Worker* w = &current_worker();
  switch_fiber(self, *w->native_, [w, f = &self] { w->idle_fibers_.push(f); });
}

Fiber* FiberRuntime::new_fiber(Worker& w) noexcept {
  const std::int64_t live = std::max<std::int64_t>(0, live_.current());
  try {
    if (!memory_try_charge(fiber_charge_bytes(), static_cast<std::uint64_t>(live) * kTaskRecordBytes)) {
      fail(memory_budget_report(live));
      return nullptr;
    }
    try {
      Fiber* f = Fiber::create(stacks_, &FiberRuntime::fiber_entry);
      fiber_charge_.fibers.fetch_add(1, std::memory_order_relaxed);
      w.stats.add(Counter::stacks_allocated);
      return f;
    } catch (...) {
      memory_release(fiber_charge_bytes());
      throw;
    }
  } catch (const std::exception& e) {  // the stack allocator's message names the limit and the fix
    fail_no_fiber(w, e.what(), live);
    return nullptr;
  }
}

// Cold and out of line: its message buffer must not enlarge new_fiber's frame, which sits
// on a suspending task's fiber stack.
[[gnu::cold, gnu::noinline]] void FiberRuntime::fail_no_fiber(const Worker& w, const char* cause,
                                                             std::int64_t live_tasks) noexcept {
  if (w.current_fiber_ == nullptr) {  // a worker starting
    fail_worker_start(w, "its first fiber stack", cause);
    return;
  }
  char why[kResourceMessageRoom];
  std::snprintf(why, sizeof why, "%s (%lld live tasks)", cause, static_cast<long long>(live_tasks));
  fail(why);
}

std::string FiberRuntime::memory_budget_report(std::int64_t live_tasks) const {
  const MemoryBudget budget = memory_budget();
  const std::uint64_t held = memory_charged() + static_cast<std::uint64_t>(live_tasks) * kTaskRecordBytes;
  return "memory budget of " + mib(budget.bytes) + " (" + budget.source + ") reached: " +
         std::to_string(live_tasks) + " live tasks and " + std::to_string(fiber_charge_.fibers.load()) +
         " fiber stacks hold about " + mib(held) +
         "; use a smaller problem (--n, or a serial --cutoff), a LIFO order (steal-half, or central --order lifo), "
         "or a larger --memory-budget";
}

void FiberRuntime::fail(std::string_view why) noexcept {
  SCHEDLAB_ASSERT(!why.empty(), "a failure says why");
  {
    std::lock_guard lock(root_mutex_);
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      failure_.assign(why);
    } catch (const std::bad_alloc&) {
      failure_.assign(why.substr(0, failure_.capacity()));  // fits: no allocation
    }
    failed_.store(true, std::memory_order_release);
  }
  root_cv_.notify_all();
}

[[gnu::cold]] void FiberRuntime::fail_worker_start(const Worker& w, const char* what, const char* cause) noexcept {
  char why[kResourceMessageRoom];
  worker_out_of_memory(why, sizeof why, w.index() + 1, config_.threads, what, cause);
  fail(why);
}

void FiberRuntime::abandon_current_task(Worker& w) {
  Worker* wp = &w;
  w.stats.add(Counter::fiber_switches);
  switch_fiber(*w.current_fiber_, *w.native_, [wp] {
    wp->current_fiber_ = wp->native_;
    wp->current_task_ = nullptr;
  });
  std::abort();  // unreachable: nothing resumes an abandoned task
}

void FiberRuntime::throw_failure() {
  // Wakes the parked workers; each busy one leaves at its next return to the schedule loop.
  policy_->shutdown();
  while (threads_running_.load(std::memory_order_acquire) != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::lock_guard lock(root_mutex_);
  throw ResourceError(failure_);
}

// The root's group reached zero: wake the harness thread. Once per run, so a mutex and
// condition variable cost nothing measurable, and unlike an atomic wait they let the harness
// thread wake up periodically to watch for deadlock.
void FiberRuntime::root_done() {
  {
    std::lock_guard lock(root_mutex_);
    root_done_ = true;
  }
  root_cv_.notify_all();
}

void FiberRuntime::blocking_begin() {
  Worker& w = current_worker();
  if (w.tracing()) w.syscall_begin_ns = now_ns();
  policy_->blocking_begin(w);
}
void FiberRuntime::blocking_end() {
  // Still the thread that made the call: nothing switches fibers during it.
  Worker& w = current_worker();
  if (w.tracing()) w.trace.add(TraceKind::syscall, w.syscall_begin_ns, now_ns());
  policy_->blocking_end(w);
}

bool FiberRuntime::trace_next_run(std::size_t max_events) {
  // Each worker may fill a share of the budget; threads the policy adds during the run (hand-off)
  // get a share too, and the harness drops whatever exceeds the total.
  const unsigned n = config_.threads;
  for (unsigned i = 0; i < worker_count(); ++i) {
    workers_[i]->trace.reset(max_events / n);
    workers_[i]->tracing_flag.store(true, std::memory_order_release);
  }
  trace_cap_per_worker_ = max_events / n;
  return true;
}

std::vector<WorkerTrace> FiberRuntime::take_trace() {
  std::vector<WorkerTrace> out;
  for (unsigned i = 0; i < worker_count(); ++i) {
    workers_[i]->tracing_flag.store(false, std::memory_order_release);
    out.push_back(workers_[i]->trace.take(i));
  }
  trace_cap_per_worker_ = 0;
  return out;
}

// Executed by the harness thread between runs. Every delay a worker recorded happened before
// the root it belongs to finished (a task's delay is recorded before it runs, and its end is
// published to the root through the completion protocol), and the next run's are recorded after
// the root is submitted: no worker writes a histogram while this reads and clears it.
std::optional<LatencyDistribution> FiberRuntime::take_sched_delays() {
  if (!config_.latency) return std::nullopt;
  LatencyHistogram merged;
  for (unsigned i = 0; i < worker_count(); ++i) {
    merged.merge(*workers_[i]->delays);
    workers_[i]->delays->clear();
  }
  return merged.distribution();
}

void FiberRuntime::note_unpark(Worker* from) noexcept {
  if (from != nullptr) {
    from->stats.add(Counter::unparks);
  } else {
    external_unparks_.fetch_add(1, std::memory_order_relaxed);
  }
}

// How long every worker must have slept, each in one sleep and unwoken, before the run is
// declared deadlocked. A state in which no worker runs and none has a wake-up on its way cannot
// change by itself (only the harness submits from outside, and it does not while it waits for
// the root), so the window is not what makes the verdict sound; it is slack for policies whose
// wake-ups the check cannot see (a condition variable's notify, unlike a parker's permit,
// leaves no trace until the thread runs). A task in a blocking call keeps its thread awake, so
// slow I/O never looks like this.
constexpr std::uint64_t kDeadlockAfterNs = 1'000'000'000;

// Executed by the harness thread, which is not a worker: it submits the root from outside and
// sleeps until the root's group count drops to zero.
void FiberRuntime::run_root(const std::function<void()>& root) {
  if (deadlocked_) {
    throw DeadlockError("this scheduler deadlocked in an earlier run and cannot run again; build a new one");
  }
  if (failed_.load(std::memory_order_acquire)) throw_failure();
  live_.reset_peak();
  auto* t = new detail::TaskWith<std::function<void()>, void>(root);
  t->group = &root_group_;
  t->spawned_on = Worker::kNoProc;
  root_group_.pending.store(1, std::memory_order_relaxed);
  roots_spawned_.fetch_add(1, std::memory_order_relaxed);
  std::int64_t batch = 0;
  live_.adjust(batch, +1);
  live_.flush(batch);
  {
    std::lock_guard lock(root_mutex_);
    root_done_ = false;
  }
  mark_runnable(*t);
  policy_->submit_new(*t, nullptr);
  if (preempt_monitor_) preempt_monitor_->note_run_started();
  all_asleep_since_ = 0;
  std::unique_lock lock(root_mutex_);
  while (!root_done_) {
    if (failed_.load(std::memory_order_relaxed)) {
      lock.unlock();
      throw_failure();
    }
    if (!root_cv_.wait_for(lock, std::chrono::milliseconds(100),
                           [this] { return root_done_ || failed_.load(std::memory_order_relaxed); }) &&
        stuck(now_ns())) {
      // Tasks parked on channels or mutexes that no running task can ready: Go's "all
      // goroutines are asleep". Their waits are abandoned and the tasks unwind.
      std::string report = report_and_abandon_sync_waits(
          "deadlock: all " + std::to_string(worker_count()) + " worker threads have slept for " +
              std::to_string(kDeadlockAfterNs / 1'000'000) + " ms and the root task has not finished",
          workers_dump() + policy_->dump_state());
      if (!report.empty()) break_sync_deadlock(lock, std::move(report));
      // Otherwise the stuck tasks and their fibers are leaked: nothing can resume them. The
      // workers are idle and exit normally when this runtime is destroyed.
      deadlocked_ = true;
      throw DeadlockError(deadlock_report());
    }
  }
  lock.unlock();
  if (failed_.load(std::memory_order_acquire)) throw_failure();  // the root finished, other work did not
  if (root_group_.first_error) std::rethrow_exception(std::exchange(root_group_.first_error, nullptr));
}

// How long the root may take to unwind once a deadlock's waits are abandoned: each abandoned
// operation throws at once, so only a task stuck elsewhere (a lost wake-up) can hold it up.
constexpr std::chrono::seconds kUnwindPatience{10};

void FiberRuntime::break_sync_deadlock(std::unique_lock<std::mutex>& lock, std::string report) {
  if (!root_cv_.wait_for(lock, kUnwindPatience, [this] { return root_done_ || failed_.load(std::memory_order_relaxed); })) {
    deadlocked_ = true;
    throw DeadlockError(report + "\n  (the abandoned tasks did not unwind within " +
                        std::to_string(kUnwindPatience.count()) + " s: " + deadlock_report() + ")");
  }
  lock.unlock();
  if (failed_.load(std::memory_order_acquire)) throw_failure();
  // The root unwound with the abandoned operations' DeadlockError (or its own): the report says
  // more than either.
  root_group_.first_error = nullptr;
  throw DeadlockError(report);
}


// Each worker's sleep_id() is sampled every 100 ms. A woken worker still waiting for a CPU
// reads 0, and a worker that woke and slept again reads a new id, so neither a thread starved
// by an overloaded kernel nor a chain of short sleeps (two threads handing a P back and forth,
// each hand-off a wake-up that takes milliseconds under load) can pass for one long sleep.
bool FiberRuntime::stuck(std::uint64_t now) {
  if (const Poller* p = poller(); p != nullptr && p->waiters() > 0) {
    // Tasks parked on sockets wait for the kernel, as a blocking call does: a server that takes
    // seconds to answer is slow, not deadlocked (netmix's server gives up on a stalled client).
    all_asleep_since_ = 0;
    return false;
  }
  const unsigned n = worker_count();
  std::vector<std::uint64_t> sleeps(n);
  for (unsigned i = 0; i < n; ++i) {
    sleeps[i] = workers_[i]->sleep_id();
    if (sleeps[i] == 0) {
      all_asleep_since_ = 0;
      return false;
    }
  }
  if (all_asleep_since_ == 0 || sleeps != sleeps_then_) {
    all_asleep_since_ = now;
    sleeps_then_ = std::move(sleeps);
    return false;
  }
  return now - all_asleep_since_ >= kDeadlockAfterNs;
}

std::string FiberRuntime::deadlock_report() const {
  // Parked workers have flushed their live-task batches, so the gauge is exact here.
  const std::int64_t alive = live_.settled();
  std::uint64_t queued = 0;
  if (const std::optional<SchedSnapshot> snap = snapshot()) {
    queued = snap->global_queue;
    for (std::uint64_t q : snap->local_queues) queued += q;
  }
  const std::int64_t suspended = alive - static_cast<std::int64_t>(queued);
  return "deadlock: all " + std::to_string(worker_count()) + " worker threads have slept for " +
         std::to_string(kDeadlockAfterNs / 1'000'000) + " ms and the root task has not finished; tasks alive: " +
         std::to_string(alive) + " (" + std::to_string(queued) +
         " queued with no worker woken for them: a lost wake-up; " + std::to_string(suspended) +
         " suspended in a join or wait that can never complete); a scheduler or workload bug, not a slow run" +
         workers_dump() + policy_->dump_state();
}

// One line per worker for the deadlock report: how long it has slept, and how many tasks it
// ran. (The state is read again here, after stuck(); a worker reading "woken" or "awake" was
// woken since, which stuck() rules out for a parker's wake-ups.)
std::string FiberRuntime::workers_dump() const {
  const std::uint64_t now = now_ns();
  std::string out;
  for (unsigned i = 0; i < worker_count(); ++i) {
    const Worker& w = *workers_[i];
    out += "\n  M" + std::to_string(i) + ": ";
    if (w.sleep_id() != 0) {
      out += "asleep for " + std::to_string(w.idle_now_ns(now) / 1'000'000) + " ms";
    } else {
      out += w.parker.notified() ? "woken, not yet running" : "awake";
    }
    out += ", " + std::to_string(w.stats.get(Counter::tasks_executed)) + " tasks run";
  }
  return out;
}

std::optional<SchedSnapshot> FiberRuntime::snapshot() const {
  SchedSnapshot s;
  s.procs = config_.threads;
  s.threads = worker_count();
  for (unsigned i = 0; i < s.threads; ++i) s.idle_procs += workers_[i]->parked() ? 1 : 0;
  if (s.idle_procs > s.procs) s.idle_procs = s.procs;
  policy_->describe(s);
  return s;
}

CounterSet FiberRuntime::counters() const {
  CounterSet c;
  const std::uint64_t now = now_ns();
  const unsigned n = worker_count();
  for (unsigned i = 0; i < n; ++i) {
    const Worker& w = *workers_[i];
    for (std::size_t k = 0; k < kCounterCount; ++k) c.value[k] += w.stats.get(static_cast<Counter>(k));
    c[Counter::idle_ns] += w.idle_now_ns(now);
  }
  c[Counter::unparks] += external_unparks_.load(std::memory_order_relaxed);
  c[Counter::chan_readies] += external_chan_readies_.load(std::memory_order_relaxed);
  c[Counter::lock_readies] += external_lock_readies_.load(std::memory_order_relaxed);
  if (preempt_monitor_) {
    c[Counter::sysmon_wakeups] += preempt_monitor_->rounds();
    c[Counter::sysmon_cpu_ns] += preempt_monitor_->cpu_ns();
  }
  c[Counter::tasks_spawned] += roots_spawned_.load(std::memory_order_relaxed);
  c[Counter::peak_live_tasks] = live_.peak();
  if (const Poller* p = poller()) {
    c[Counter::netpoll_readied] += p->readied();
    c[Counter::netpoll_polls] += p->polls();
    c[Counter::netpoll_blocked_ns] += p->blocked_ns();
  }
  policy_->add_external_pushes(c);
  policy_->add_counters(c);
  c.measured.set();
  return c;
}

std::vector<pid_t> FiberRuntime::worker_tids() const {
  std::vector<pid_t> tids;
  for (unsigned i = 0; i < worker_count(); ++i) tids.push_back(workers_[i]->tid());
  return tids;
}

}  // namespace schedlab
