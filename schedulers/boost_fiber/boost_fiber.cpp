// boost-fiber, boost-fiber-shared: Boost.Fiber 1.74, the fiber library a C++ user who wants
// goroutine-like tasks would pick, set up the way its own skynet benchmark sets it up.
//
// What it models. One Boost.Fiber scheduler per worker thread (--threads of them), each with one
// of the library's multi-thread algorithms:
//   boost-fiber          algo::work_stealing: a FIFO ready queue per thread behind a spinlock;
//                        a thread whose queue is empty steals the oldest fiber of a random
//                        other thread (up to --threads tries per look);
//   boost-fiber-shared   algo::shared_work: one FIFO ready queue behind one std::mutex for all
//                        threads (the library's analogue of `central`).
// A fiber that joins an unfinished fiber suspends; the dispatcher fiber of its thread runs the
// next ready fiber. Terminated fibers are released (their stacks returned) by the dispatcher
// fiber when it next runs, not when they end: Boost's design, visible as stacks in use.
//
// How the API maps onto it (skynet_stealing_join.cpp, Boost's own benchmark):
//   spawn(f)    a boost::fibers::fiber launched with launch::dispatch, as skynet does: the new
//               fiber runs at once and the spawner waits in the ready queue, where a thief may
//               take it (continuation stealing). The fiber handle lives in Task::backend;
//   join(h)     fiber::join(), then the handle is destroyed;
//   WaitGroup   its fibers are detached; the last one to finish notifies a
//               boost::fibers::condition_variable that wait() sleeps on (the library's idiom for
//               waiting on a count; it has no wait group);
//   blocking    nothing: a fiber that blocks in the kernel blocks its thread, and that thread's
//               other ready fibers wait (Boost.Fiber has no hand-off).
//   socket wait poll(2) on the thread (Scheduler::io_wait's default): Boost.Fiber has no poller
//               (Boost.Asio integration is left to the user), so its other fibers wait too.
//   channels    Boost.Fiber's own: unbuffered_channel for capacity 0, buffered_channel for more
//               (BoostChannel below). A buffered_channel's capacity is a power of two of which it
//               holds one less, so a channel asked for N gets the smallest that holds N
//               (1023: 1024, exactly); a send parks only past that. Values travel in a slot of
//               8, 16, 32 or 64 bytes, the smallest that holds the element;
//   mutex       Boost.Fiber's timed_mutex (BoostMutex below): a waiter parks in its queue and
//               an unlock readies the first (no spinning, no starvation mode: Boost's rules);
//               it waits in rounds of 100 ms, so that a deadlock's waits can be abandoned;
//   yield       boost::this_fiber::yield();
//
// Set-up, and where it departs from skynet:
//   - Algorithms: skynet uses algo::work_stealing / algo::shared_work themselves. In Boost 1.74
//     both keep their state in static members: work_stealing registers every instance in one
//     process-wide array sized by the first thread count it sees (a second set of threads, or
//     another thread count, indexes past its end), and shared_work has one process-wide queue.
//     The harness keeps a 1-thread and a 2-thread scheduler alive side by side, so
//     PoolWorkStealing and PoolSharedWork (algorithms.hpp) are the same code with that state
//     moved into a per-scheduler Pool. One more departure: with one thread, 1.74's work_stealing
//     looks for a victim other than itself forever when its queue is empty; the port does not
//     steal then.
//   - Idle waiting: skynet uses the algorithms' default, suspend=false: a thread with nothing to
//     run returns from suspend_until() at once and looks again, so idle threads spin (the
//     library's suspend=true would park a thread until one of its own fibers is readied from
//     another thread, and a parked thread never learns of new work elsewhere: runs would stay
//     serial). We spin likewise while a run is active, and sleep on a condition variable between
//     runs, so that a scheduler kept alive between repetitions does not take the CPUs from the
//     others.
//   - Stacks: skynet uses fixedsize_stack of two pages (8 KiB, malloc'ed per fiber). The library's
//     default, fixedsize_stack of 128 KiB, is what makes a naive fib cost 5-7 µs per fiber here:
//     128 KiB is glibc's mmap threshold, so every fiber is an mmap, page faults and a munmap.
//     With 8 KiB stacks the heap still grows and shrinks with the unreleased fibers (brk calls
//     and page faults each run). We give Boost the fiber runtime's own StackAllocator
//     (runtime/stack.hpp: pooled, reused LIFO, guard pages, --stack-size, default 64 KiB), so that
//     both designs run on the same stacks and the comparison is of schedulers, not of
//     allocators. Boost's own pooled_fixedsize_stack is not thread-safe, and a work-stealing
//     fiber is freed by whichever thread releases it.
//   - Threads: skynet's main thread takes part; here --threads dedicated threads do (the
//     harness thread hands the root to worker 0, whose main fiber launches and joins it), as
//     the fiber runtime's workers do. Notifying worker 0 gives the harness thread a Boost.Fiber
//     main context of its own on first use (the library creates one for any thread that uses
//     its synchronisation); it never runs fibers. With --pin on, worker i binds itself to the
//     i-th allowed CPU (cpu_pin.hpp) before the scheduler is ready.
//   - Memory: a fiber's stack commits two pages (Boost's context record at its top, the first
//     frames below it: 8.0-8.2 KiB per fiber measured, skynet 10^4 to 10^5 and fib-go 15 to 20
//     under boost-fiber-shared, one thread), and Boost releases a finished fiber's stack only
//     when its thread's dispatcher next runs (under shared_work, when the shared queue runs dry),
//     so a wide tree holds most of its stacks at once: skynet 10^6 under boost-fiber-shared
//     passed 6 GB. So the stacks are charged against the process's memory budget
//     (memory_budget.hpp, as the fiber runtime's are) when the pool maps a new one, and a spawn
//     that would pass it throws ResourceError naming the fibers Boost holds and the fix; the
//     exception unwinds the tree (every later spawn fails too) and ends the run with that line.
//   - Stack overflows: every worker thread is armed for one (runtime/fiber_guard.hpp), so a
//     fiber that runs off its stack is reported with the --stack-size that fixes it.
//   - Boost's published skynet figures (0.05-0.11 µs per fiber) divide the wall time of 10^6
//     fibers on 32 hardware threads; its single-thread figure is 1.69-1.79 µs per fiber
//     (round_robin, tcmalloc). Compare per-task costs at equal thread counts.
//
// Counters: tasks spawned and executed, migrations (a fiber started by another thread than its
// spawner's; one resumed elsewhere after a join is not seen), suspensions (joins of an
// unfinished fiber, waits on an unfinished group), threads, stacks allocated, lock_parks (a
// lock that found the mutex taken) and yields. Boost does not expose its queues, steals,
// switches, idle time or which channel operation parked: those are not measured.
//
// Deadlocks: every live fiber blocked in a channel operation, a lock, a join or a wait for a
// second with nothing finishing (sync/blocked_watch.hpp) is reported naming the channels and
// mutexes they wait on; the channels are then closed and the locks give up (each throws
// DeadlockError), so that the fibers unwind.
//
// The files: this one is the adapter (the Scheduler implementation, Boost's channels and mutex
// behind the API, ASan's notices); algorithms.hpp the port of the two algorithms with per-pool
// state; charged_stacks.hpp the stacks charged against the memory budget.
#include "boost_fiber.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <boost/fiber/buffered_channel.hpp>
#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/mutex.hpp>
#include <boost/fiber/operations.hpp>
#include <boost/fiber/timed_mutex.hpp>
#include <boost/fiber/unbuffered_channel.hpp>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <optional>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "../assert.hpp"
#include "../memory_budget.hpp"
#include "../runtime/fiber_guard.hpp"
#include "../stats.hpp"
#include "../sync/blocked_watch.hpp"
#include "algorithms.hpp"
#include "charged_stacks.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace schedlab {
namespace {

namespace bf = boost::fibers;
using boost_fiber::ChargedStacks;
using boost_fiber::ChargedStacksRef;
using boost_fiber::Pool;

// ---- the scheduler ----------------------------------------------------------------------------

// This thread's worker index. Fibers move between threads, and glibc lets the compiler reuse a
// thread_local's address across calls (docs/platform.md), so it is read through this fenced,
// non-inlined accessor after every point where the calling fiber may have been suspended.
thread_local unsigned tls_index = 0;
[[gnu::noinline]] unsigned current_index() noexcept {
  asm volatile("" ::: "memory");
  return tls_index;
}

// A handle's fiber lives in the Task's backend slot, which is exactly a fiber's size.
static_assert(sizeof(bf::fiber) == sizeof(void*) && alignof(bf::fiber) <= alignof(void*));
bf::fiber& fiber_of(Task& t) { return *std::launder(reinterpret_cast<bf::fiber*>(&t.backend)); }

// ---- ASan and Boost.Fiber's stack switches -----------------------------------------------------
//
// libboost_fiber switches stacks without telling ASan (Debian builds it without BOOST_USE_ASAN),
// so ASan goes on believing that each worker thread runs on the thread's own stack. That belief
// matters when an exception is thrown: ASan's __asan_handle_no_return clears the poison of the
// frames the throw will unwind, and on a stack it does not believe in it gives up ("ASan is
// ignoring requested __asan_handle_no_return"). The unwound frames' poison then stays, and is
// reported against whatever lands there next: our pick_next, called from libboost_fiber at a
// root fiber's end (CI, RandomSpawnTrees, boost-fiber-shared), or __asan_handle_no_return's own
// sigaltstack() at the fiber's next throw (RootException.ARootThrownFromDeep...).
//
// So, in ASan builds, our code tells ASan which stack it is on at every point where it may have
// been switched: when a task's or root's fiber starts, after each call that can suspend the
// calling fiber (spawn, whose launch::dispatch runs the child first; join; wait) and when a
// worker's main fiber is back on the thread's stack. Exceptions are thrown by task bodies and
// roots (and the calls they make), which run between such points, and nothing between two of
// them switches stacks (blocking calls and socket waits block the thread), so the belief is
// right at every throw. A notice is
// __sanitizer_start_switch_fiber and __sanitizer_finish_switch_fiber back to back, on the stack
// being announced: the switch itself has already happened.
#if defined(__SANITIZE_ADDRESS__)
// The stack ASan believes this thread is on (its own stack until told otherwise).
thread_local StackRange asan_believed_stack = current_thread_stack();

void tell_asan_stack(StackRange stack) noexcept {
  SCHEDLAB_ASSERT(stack.contains(__builtin_frame_address(0)), "ASan is told of the stack it runs on");
  void* fake_stack = nullptr;  // ASan's fake stack (use-after-return), kept across the notice
  __sanitizer_start_switch_fiber(&fake_stack, stack.low, stack.size);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
  asan_believed_stack = stack;
}
#endif

// What a WaitGroup's fibers share with its waiter.
struct GroupSync {
  bf::mutex mutex;
  bf::condition_variable done;
};

// ASan builds: tells ASan the stack the calling fiber is on (one of `stacks`), when it believes
// another (see "ASan and Boost.Fiber's stack switches"); nothing otherwise. Called after every
// call that may have switched fibers.
void on_fiber_stack(const ChargedStacks& stacks) noexcept {
#if defined(__SANITIZE_ADDRESS__)
  const void* here = __builtin_frame_address(0);
  if (!asan_believed_stack.contains(here)) tell_asan_stack(stacks.stack_holding(here));
#else
  (void)stacks;
#endif
}

// ---- channels and mutexes: Boost.Fiber's own ---------------------------------------------------

// What a BoostChannel carries: an element's bytes (Channel<T> requires a trivially copyable T).
template <std::size_t N>
struct Slot {
  alignas(std::max_align_t) unsigned char bytes[N];
};

// A task blocked inside one of Boost's channel or mutex operations, counted for the deadlock
// watch and for the report (`waiting`: this object's).
class BlockedIn {
 public:
  BlockedIn(BlockedWatch& watch, std::atomic<std::uint32_t>& waiting) : watch_(watch), waiting_(waiting) {
    waiting_.fetch_add(1, std::memory_order_relaxed);
    watch_.block();
  }
  ~BlockedIn() {
    watch_.unblock();
    waiting_.fetch_sub(1, std::memory_order_relaxed);
  }
  BlockedIn(const BlockedIn&) = delete;
  BlockedIn& operator=(const BlockedIn&) = delete;

 private:
  BlockedWatch& watch_;
  std::atomic<std::uint32_t>& waiting_;
};

// Boost.Fiber's unbuffered_channel (capacity 0) or buffered_channel, for elements of up to N bytes.
template <std::size_t N>
class BoostChannel final : public ChannelCore {
 public:
  BoostChannel(Scheduler& s, const ChargedStacks& stacks, BlockedWatch& watch, std::size_t capacity,
               std::size_t elem_size, std::string name)
      : ChannelCore(s, "channel", std::move(name)), stacks_(stacks), watch_(watch), elem_size_(elem_size),
        capacity_(capacity) {
    if (capacity == 0) {
      unbuffered_.emplace();
    } else {
      buffered_.emplace(std::bit_ceil(capacity + 1));  // holds one less than its size
    }
  }
  ~BoostChannel() override { leave_registry(); }

  void send(const void* value) override {
    Slot<N> slot;
    std::memcpy(slot.bytes, value, elem_size_);
    bf::channel_op_status status;
    {
      const BlockedIn blocked(watch_, senders_);
      status = unbuffered_ ? unbuffered_->push(slot) : buffered_->push(slot);
    }
    on_fiber_stack(stacks_);
    if (abandoned_.load(std::memory_order_acquire)) throw_abandoned(*this, WaitKind::send);
    if (status == bf::channel_op_status::closed) throw std::logic_error("send on closed " + label());
  }
  bool recv(void* out) override {
    Slot<N> slot;
    bf::channel_op_status status;
    {
      const BlockedIn blocked(watch_, receivers_);
      status = unbuffered_ ? unbuffered_->pop(slot) : buffered_->pop(slot);
    }
    on_fiber_stack(stacks_);
    if (status == bf::channel_op_status::success) {
      std::memcpy(out, slot.bytes, elem_size_);
      return true;
    }
    if (abandoned_.load(std::memory_order_acquire)) throw_abandoned(*this, WaitKind::recv);
    return false;
  }
  void close() override {
    if (closed_.exchange(true, std::memory_order_acq_rel)) {
      if (abandoned_.load(std::memory_order_acquire)) return;  // the deadlock watch closed it
      throw std::logic_error("close of closed " + label());
    }
    if (unbuffered_) {
      unbuffered_->close();
    } else {
      buffered_->close();
    }
  }
  // Boost keeps its waiters to itself: the tasks inside this channel's operations, counted.
  std::size_t describe_waiters(std::string& out) const override {
    const std::uint32_t senders = senders_.load(std::memory_order_relaxed);
    const std::uint32_t receivers = receivers_.load(std::memory_order_relaxed);
    const std::string what = label() + " (" + (capacity_ == 0 ? std::string("unbuffered") : "buffered") + ")";
    if (senders != 0) out += "\n  " + std::to_string(senders) + " task(s): send on " + what;
    if (receivers != 0) out += "\n  " + std::to_string(receivers) + " task(s): receive from " + what;
    return senders + receivers;
  }
  // Closing the channel wakes every waiter; each sees the mark and throws.
  void abandon(std::vector<Waiter*>&) override {
    abandoned_.store(true, std::memory_order_release);
    if (!closed_.exchange(true, std::memory_order_acq_rel)) {
      if (unbuffered_) {
        unbuffered_->close();
      } else {
        buffered_->close();
      }
    }
  }

 private:
  const ChargedStacks& stacks_;
  BlockedWatch& watch_;
  const std::size_t elem_size_;
  const std::size_t capacity_;
  std::optional<bf::unbuffered_channel<Slot<N>>> unbuffered_;
  std::optional<bf::buffered_channel<Slot<N>>> buffered_;
  std::atomic<bool> closed_{false};
  std::atomic<bool> abandoned_{false};
  std::atomic<std::uint32_t> senders_{0};
  std::atomic<std::uint32_t> receivers_{0};
};

// Boost.Fiber's timed_mutex. A lock that finds it taken parks in Boost's queue, in rounds of
// kLockRound so that the deadlock watch can abandon it (a round costs a timer entry in the
// fiber's scheduler, nothing while the mutex is free).
class BoostMutex final : public MutexCore {
 public:
  BoostMutex(Scheduler& s, const ChargedStacks& stacks, BlockedWatch& watch, std::atomic<std::uint64_t>& parks,
             std::string name)
      : MutexCore(s, "mutex", std::move(name)), stacks_(stacks), watch_(watch), parks_(parks) {}
  ~BoostMutex() override { leave_registry(); }

  void lock() override {
    if (mutex_.try_lock()) return;
    parks_.fetch_add(1, std::memory_order_relaxed);
    const BlockedIn blocked(watch_, waiting_);
    while (!mutex_.try_lock_until(std::chrono::steady_clock::now() + kLockRound)) {
      on_fiber_stack(stacks_);
      if (abandoned_.load(std::memory_order_acquire)) throw_abandoned(*this, WaitKind::lock);
    }
    on_fiber_stack(stacks_);
  }
  bool try_lock() override { return mutex_.try_lock(); }
  void unlock() override { mutex_.unlock(); }
  std::size_t describe_waiters(std::string& out) const override {
    const std::uint32_t n = waiting_.load(std::memory_order_relaxed);
    if (n != 0) out += "\n  " + std::to_string(n) + " task(s): lock of " + label();
    return n;
  }
  void abandon(std::vector<Waiter*>&) override { abandoned_.store(true, std::memory_order_release); }

 private:
  static constexpr std::chrono::milliseconds kLockRound{100};
  const ChargedStacks& stacks_;
  BlockedWatch& watch_;
  std::atomic<std::uint64_t>& parks_;  // the scheduler's lock_parks
  bf::timed_mutex mutex_;
  std::atomic<bool> abandoned_{false};
  std::atomic<std::uint32_t> waiting_{0};
};

class BoostFiberScheduler final : public Scheduler {
 public:
  explicit BoostFiberScheduler(const BoostFiberConfig& config)
      : config_(config), pin_cpus_(config.pin ? allowed_cpus() : std::vector<int>{}), stacks_(config.stack), pool_(config.algorithm, config.threads), stats_(config.threads),
        tids_(config.threads, 0) {
    // The destructor does not run for a constructor that throws: stop() joins what was started
    // (a joinable std::thread destroyed would be std::terminate).
    threads_.reserve(config_.threads);
    for (unsigned i = 0; i < config_.threads; ++i) {
      try {
        threads_.emplace_back([this, i] { worker_main(i); });
      } catch (const std::system_error& e) {
        stop();
        throw worker_thread_refused(std::to_string(i + 1) + " of " + std::to_string(config_.threads),
                                    e.code().value());
      }
    }
    std::unique_lock lock(mutex_);
    harness_wake_.wait(lock, [this] { return ready_threads_ == config_.threads; });
    if (start_error_[0] != '\0') {
      lock.unlock();
      stop();
      throw ResourceError(start_error_);
    }
  }

  ~BoostFiberScheduler() override { stop(); }

  unsigned threads() const override { return config_.threads; }
  std::vector<pid_t> worker_tids() const override { return tids_; }

  CounterSet counters() const override {
    CounterSet c;
    for (Counter k : {Counter::tasks_spawned, Counter::tasks_executed, Counter::migrations,
                      Counter::suspensions}) {
      std::uint64_t sum = 0;
      for (const WorkerStats& s : stats_) sum += s.get(k);
      c.set(k, sum);
    }
    c.set(Counter::threads_created, config_.threads);
    c.set(Counter::stacks_allocated, stacks_.mapped());
    c.set(Counter::lock_parks, lock_parks_.load(std::memory_order_relaxed));
    c.set(Counter::yields, yields_.load(std::memory_order_relaxed));
    return c;
  }

  // Boost.Fiber's own channels and mutex (see the top of this file).
  std::unique_ptr<ChannelCore> make_channel(std::size_t capacity, std::size_t elem_size, std::string name) override {
    if (elem_size <= 8) return std::make_unique<BoostChannel<8>>(*this, stacks_, watch_, capacity, elem_size, std::move(name));
    if (elem_size <= 16) return std::make_unique<BoostChannel<16>>(*this, stacks_, watch_, capacity, elem_size, std::move(name));
    if (elem_size <= 32) return std::make_unique<BoostChannel<32>>(*this, stacks_, watch_, capacity, elem_size, std::move(name));
    return std::make_unique<BoostChannel<64>>(*this, stacks_, watch_, capacity, elem_size, std::move(name));
  }
  std::unique_ptr<MutexCore> make_mutex(std::string name) override {
    return std::make_unique<BoostMutex>(*this, stacks_, watch_, lock_parks_, std::move(name));
  }
  void yield() override {
    yields_.fetch_add(1, std::memory_order_relaxed);
    boost::this_fiber::yield();
    on_fiber_stack();
  }

  void spawn(Task& t) override {
    const unsigned slot = current_index();
    stats_[slot].add(Counter::tasks_spawned);
    t.spawned_on = slot;
    GroupState* group = t.group;
    // The first go() of a group comes before any of its tasks runs: no race on the lazy set-up.
    if (group != nullptr && group->backend == nullptr) group->backend = new GroupSync;
    // With launch::dispatch the task runs before the constructor returns, and a group task may
    // already be freed then: only the fiber handle is touched afterwards.
    bf::fiber f;
    try {
      f = bf::fiber(bf::launch::dispatch, std::allocator_arg, ChargedStacksRef{&stacks_},
                    [this, task = &t] { execute(*task); });
      on_fiber_stack();  // the child ran first; this fiber may have been stolen meanwhile
    } catch (...) {
      // No fiber (its stack was refused): api.hpp frees nothing when spawn throws.
      if (group != nullptr) group->pending.fetch_sub(1, std::memory_order_acq_rel);
      t.destroy(t);
      throw;
    }
    if (group != nullptr) {
      f.detach();
    } else {
      new (&t.backend) bf::fiber(std::move(f));  // t lives until its handle joins it
    }
  }

  void join(Task& t) override {
    if (t.completion.load(std::memory_order_acquire) != Task::kDone) {
      stats_[current_index()].add(Counter::suspensions);
    }
    bf::fiber& f = fiber_of(t);
    {
      const BlockedIn blocked(watch_, joining_);
      f.join();
    }
    on_fiber_stack();
    f.~fiber();
  }

  void wait(GroupState& g) override {
    auto* sync = static_cast<GroupSync*>(g.backend);
    if (sync != nullptr) {
      std::unique_lock lock(sync->mutex);
      auto finished = [&g] { return (g.pending.load(std::memory_order_acquire) & GroupState::kCountMask) == 0; };
      if (!finished()) {
        stats_[current_index()].add(Counter::suspensions);
        const BlockedIn blocked(watch_, joining_);
        sync->done.wait(lock, finished);
      }
    }
    on_fiber_stack();  // taking the fiber mutex can suspend too
    delete sync;  // every group fiber has let go of it: the last one notified under the mutex
    g.backend = nullptr;
    g.pending.store(0, std::memory_order_relaxed);
  }

 protected:
  void run_root(const std::function<void()>& root) override {
    {
      std::lock_guard lock(mutex_);
      root_ = &root;
      root_error_ = nullptr;
      root_done_ = false;
    }
    pool_.start_run();
    root_wake_.notify_all();
    std::unique_lock lock(mutex_);
    // Watches for a deadlock every 100 ms (sync/blocked_watch.hpp): every live fiber blocked on a
    // channel, a mutex, a join or a wait for a second with nothing finishing. Its channels and
    // mutexes are then abandoned (each blocked operation throws DeadlockError), the fibers
    // unwind, and the report is thrown once the root has.
    std::string deadlock;
    watch_.reset();
    while (!harness_wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return root_done_; })) {
      if (!deadlock.empty() || !watch_.stuck(live_fibers(), now_ns())) continue;
      lock.unlock();
      deadlock = report_and_abandon_sync_waits(
          "deadlock: all " + std::to_string(live_fibers()) + " live fibers have been blocked for " +
              std::to_string(BlockedWatch::kDeadlockAfterNs / 1'000'000) + " ms on channels, mutexes and joins",
          "");
      lock.lock();
    }
    root_ = nullptr;
    if (!deadlock.empty()) {
      root_error_ = nullptr;
      throw DeadlockError(deadlock);
    }
    if (root_error_) std::rethrow_exception(std::exchange(root_error_, nullptr));
  }

 private:
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    // Readying a main fiber from this thread notifies its worker's algorithm, which wakes a
    // dispatcher sleeping between runs.
    root_wake_.notify_all();
    stop_wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Nothing may escape a thread's function (std::terminate): a worker that cannot set itself up
  // records why, for the constructor to throw, and its thread ends at once.
  void worker_main(unsigned index) noexcept {
    tls_index = index;
    // Tasks run on fibers; the thread's own stack runs only Boost's dispatcher and main fiber.
    (void)guard_task_thread(ThreadStackFix::stack_limit, stacks_.stack_size());
    // Pinned before the tid is published: once built, every worker is on its CPU.
    std::string pin_error;
    const char* out_of_memory = nullptr;
    try {
      if (config_.pin) {
        pin_error = pin_worker(pin_cpus_, index, config_.threads,
                               "boost-fiber worker thread " + std::to_string(index + 1));
      }
      // Gives this thread its Boost.Fiber scheduler, allocated on first use.
      if (pin_error.empty()) pool_.install(index);
    } catch (const std::bad_alloc& e) {  // under ulimit -v
      out_of_memory = e.what();
    }
    tids_[index] = static_cast<pid_t>(::syscall(SYS_gettid));
    const bool ready = out_of_memory == nullptr && pin_error.empty();
    std::unique_lock lock(mutex_);
    if (!ready && start_error_[0] == '\0') {
      if (out_of_memory != nullptr) {
        worker_out_of_memory(start_error_, sizeof start_error_, index + 1, config_.threads, "memory to start",
                             out_of_memory);
      } else {
        std::snprintf(start_error_, sizeof start_error_, "%s", pin_error.c_str());
      }
    }
    ++ready_threads_;
    harness_wake_.notify_all();
    if (!ready) return;
    if (index == 0) {
      serve_roots(lock);
    } else {
      // As in skynet: the main fiber sleeps; the thread's dispatcher runs (and steals) fibers.
      stop_wake_.wait(lock, [this] { return stopping_; });
    }
    on_thread_stack();  // ASan clears the stack it believes in when the thread ends
  }

  // Worker 0's main fiber: launches each root as a fiber and joins it.
  void serve_roots(std::unique_lock<std::mutex>& lock) {
    for (;;) {
      root_wake_.wait(lock, [this] { return stopping_ || (root_ != nullptr && !root_done_); });
      if (stopping_) return;
      const std::function<void()>& root = *root_;
      lock.unlock();
      std::exception_ptr error;
      try {
        bf::fiber f(bf::launch::post, std::allocator_arg, ChargedStacksRef{&stacks_}, [this, &root, &error] {
          on_fiber_stack();
          stats_[current_index()].add(Counter::tasks_spawned);
          try {
            root();
          } catch (...) {
            error = std::current_exception();
          }
          stats_[current_index()].add(Counter::tasks_executed);  // a root that threw ran too
        });
        f.join();
        on_thread_stack();
      } catch (...) {  // the root's fiber could not be made (its stack: the allocator says why)
        error = std::current_exception();
      }
      pool_.end_run();
      lock.lock();
      root_error_ = error;
      root_done_ = true;
      harness_wake_.notify_all();
    }
  }

  // ASan builds: tells ASan the stack the calling fiber is on, when it believes another (see
  // "ASan and Boost.Fiber's stack switches"); nothing otherwise.
  void on_fiber_stack() const noexcept { schedlab::on_fiber_stack(stacks_); }
  // The same, for a worker's main fiber, on the thread's own stack.
  void on_thread_stack() const noexcept {
#if defined(__SANITIZE_ADDRESS__)
    if (!asan_believed_stack.contains(__builtin_frame_address(0))) tell_asan_stack(current_thread_stack());
#endif
  }

  // Fibers spawned and not finished, the root included (every root fiber counts itself too).
  std::int64_t live_fibers() const noexcept {
    std::int64_t n = 0;
    for (const WorkerStats& s : stats_) {
      n += static_cast<std::int64_t>(s.get(Counter::tasks_spawned)) - static_cast<std::int64_t>(s.get(Counter::tasks_executed));
    }
    return n;
  }

  // The body of a spawned task's fiber.
  void execute(Task& t) {
    on_fiber_stack();
    const unsigned start = current_index();
    if (t.spawned_on != start) stats_[start].add(Counter::migrations);
    GroupState* group = t.group;
    t.run_body();
    stats_[current_index()].add(Counter::tasks_executed);
    watch_.progress();
    if (group == nullptr) {
      // Read by join() for the suspension count only; the fiber's end is what join waits for.
      t.completion.store(Task::kDone, std::memory_order_release);
      return;
    }
    t.destroy(t);  // nobody holds a group task
    auto* sync = static_cast<GroupSync*>(group->backend);
    // Under the mutex, so that the waiter cannot see the count at zero and free `sync` while
    // the notification is still being made.
    std::lock_guard lock(sync->mutex);
    if ((group->pending.fetch_sub(1, std::memory_order_acq_rel) & GroupState::kCountMask) == 1) {
      sync->done.notify_all();
    }
  }

  const BoostFiberConfig config_;
  const std::vector<int> pin_cpus_;  // the CPUs --pin on binds the workers to (cpu_pin.hpp)
  ChargedStacks stacks_;  // outlives every fiber: the threads release the last ones as they exit
  Pool pool_;
  std::vector<WorkerStats> stats_;  // by worker index
  std::vector<pid_t> tids_;         // written by each worker before the constructor returns
  BlockedWatch watch_;              // fibers blocked on channels, mutexes, joins and waits
  std::atomic<std::uint32_t> joining_{0};  // of those, in joins and waits (not reported by name)
  std::atomic<std::uint64_t> lock_parks_{0};
  std::atomic<std::uint64_t> yields_{0};

  std::mutex mutex_;
  std::condition_variable harness_wake_;  // the harness thread: workers ready, root done
  bf::condition_variable_any root_wake_;  // worker 0's main fiber: a root to run, or stop
  bf::condition_variable_any stop_wake_;  // the other main fibers: stop
  unsigned ready_threads_ = 0;
  // Why the first worker that could not set itself up could not (guarded by mutex_): a fixed
  // buffer, because the cause may be that no memory is left.
  char start_error_[kResourceMessageRoom] = {};
  bool stopping_ = false;
  const std::function<void()>* root_ = nullptr;
  bool root_done_ = false;
  std::exception_ptr root_error_;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

}  // namespace

std::unique_ptr<Scheduler> make_boost_fiber(const BoostFiberConfig& config) {
  return std::make_unique<BoostFiberScheduler>(config);
}

}  // namespace schedlab
