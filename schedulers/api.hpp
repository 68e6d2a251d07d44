// api.hpp: the task API every workload is written against, once, for every scheduler.
//
//   auto h = schedlab::spawn([] { return work(); });   // start a task (a goroutine)
//   int r = h.join();                                   // wait for it: its result or its exception
//
//   schedlab::WaitGroup wg;                             // Go's sync.WaitGroup, structured:
//   for (...) wg.go([] { loop(); });                    // go() adds one and starts the task,
//   wg.wait();                                          // wait() returns when all are done
//
//   auto n = schedlab::blocking([] { return ::read(...); });  // a call that may block the thread
//
//   schedlab::Socket s(fd);                             // a non-blocking socket tasks wait on:
//   auto r = schedlab::Tasks::read_full(s, buf, n);     // all n bytes, parked while none come
//
//   schedlab::Channel<int> ch;                          // Go's chan int (unbuffered; Channel<int>(N): buffered)
//   ch.send(7);                                         // parks until a receiver takes it
//   std::optional<int> v = ch.recv();                   // parks until a value comes; nullopt once closed
//   schedlab::Mutex m;                                  // Go's sync.Mutex: a waiter parks
//   schedlab::yield();                                  // Go's runtime.Gosched
//   schedlab::safepoint();                              // where a long task may be preempted
//
// Under the fiber schedulers a task that joins an unfinished task, or waits on a channel or a
// locked mutex, suspends and its worker thread runs other tasks. Under tbb a join is a
// task_group wait, under os-threads a thread join, under serial spawn is a plain call. Workloads
// cannot tell which is running them. (The end of this file has the execution types a workload's
// body is written over, Tasks and Elision.)
//
// Rules: a JoinHandle or WaitGroup joins in its destructor if nobody did (so the structure is
// always a tree and run() returning means every task is done). An exception that nobody joined
// is reported by Scheduler::run() as an error rather than dropped. WaitGroup::go() may be called
// by the task that owns the group and by the group's own tasks while they run (a task that adds
// its successor before it finishes keeps the count above zero, as with Go's wg.Add). Channels
// and mutexes are made inside a run and used by its tasks; a backend that cannot park a task
// (openmp; serial and the elision for channels) is refused the workloads that need one before
// they start (SchedulerEntry::cannot_wait).
#pragma once

#include <bit>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "assert.hpp"
#include "safepoint.hpp"
#include "scheduler.hpp"

namespace schedlab {

namespace detail {

inline Scheduler& active_or_throw() {
  Scheduler* s = active_scheduler();
  if (s == nullptr) throw std::logic_error("schedlab task API used outside Scheduler::run()");
  return *s;
}

// Called in a catch block: the exception being handled goes to `group` if there is one (a group
// task has no handle; the group keeps the first), else to `slot`, for the handle to rethrow.
// Out of line and cold: a body's normal path stays free of it.
[[gnu::noinline, gnu::cold]] inline void keep_error(std::exception_ptr& slot, GroupState* group) noexcept {
  if (group != nullptr) {
    group->record_error(std::current_exception());
  } else {
    slot = std::current_exception();
  }
}

// Where a task's body leaves its result or its exception (keep_error).
template <class R>
struct ResultSlot {
  std::optional<R> value;
  std::exception_ptr error;
  template <class F>
  void fill(F& fn, GroupState* group) noexcept {
    try {
      value.emplace(fn());
    } catch (...) {
      keep_error(error, group);
    }
  }
  R take() {
    if (error) std::rethrow_exception(error);
    return std::move(*value);
  }
};

template <>
struct ResultSlot<void> {
  std::exception_ptr error;
  template <class F>
  void fill(F& fn, GroupState* group) noexcept {
    try {
      fn();
    } catch (...) {
      keep_error(error, group);
    }
  }
  void take() {
    if (error) std::rethrow_exception(error);
  }
};

// The part of a task its JoinHandle knows: the result slot sits right after the Task, where a
// handle finds it without knowing the callable's type (one pointer per handle).
template <class R>
struct TaskWithResult : Task {
  ResultSlot<R> result;
};

// A task with its callable and result slot in one allocation.
template <class F, class R>
struct TaskWith final : TaskWithResult<R> {
  F fn;

  explicit TaskWith(F f) : fn(std::move(f)) {
    this->invoke = &TaskWith::invoke_body;
    this->destroy = &TaskWith::destroy_self;
  }

  // Tasks are small and short-lived; a per-thread allocator keeps malloc off the spawn path.
  static void* operator new(std::size_t size) {
    SCHEDLAB_ASSERT(size == sizeof(TaskWith), "a TaskWith is allocated as itself");
    return allocate_task_memory<sizeof(TaskWith)>();
  }
  static void operator delete(void* p) noexcept { free_task_memory<sizeof(TaskWith)>(p); }

  static void invoke_body(Task& t) noexcept {
    auto& self = static_cast<TaskWith&>(t);
    self.result.fill(self.fn, self.group);
  }
  static void destroy_self(Task& t) noexcept { delete static_cast<TaskWith*>(&t); }
};

}  // namespace detail

// The joinable handle of a spawned task. Move-only; join() once.
template <class R>
class JoinHandle {
 public:
  JoinHandle(JoinHandle&& o) noexcept : task_(std::exchange(o.task_, nullptr)) {}
  JoinHandle& operator=(JoinHandle&& o) noexcept {
    if (this != &o) {
      release();
      task_ = std::exchange(o.task_, nullptr);
    }
    return *this;
  }
  JoinHandle(const JoinHandle&) = delete;
  JoinHandle& operator=(const JoinHandle&) = delete;
  ~JoinHandle() { release(); }

  bool joinable() const noexcept { return task_ != nullptr; }

  // Waits for the task; returns its result or rethrows its exception.
  R join() {
    if (task_ == nullptr) throw std::logic_error("JoinHandle::join() on an empty or joined handle");
    Scheduler& s = detail::active_or_throw();
    if (s.finished_tasks_need_join() || task_->completion.load(std::memory_order_acquire) != Task::kDone) {
      s.join(*task_);
    }
    struct Free {
      Task* t;
      ~Free() { t->destroy(*t); }
    } free{std::exchange(task_, nullptr)};
    return static_cast<detail::TaskWithResult<R>*>(free.t)->result.take();
  }

 private:
  template <class F>
  friend auto spawn(F&& f);
  explicit JoinHandle(detail::TaskWithResult<R>* t) : task_(t) {}

  void release() noexcept {
    if (task_ == nullptr) return;
    detail::active_scheduler()->join(*task_);
    if (task_->result.error) detail::note_unobserved_exception();
    task_->destroy(*task_);
    task_ = nullptr;
  }

  detail::TaskWithResult<R>* task_ = nullptr;
};

// Starts `f` as a new task and returns its handle. A safe point (safepoint.hpp), as Go's `go`
// statement is a call (newproc) with a prologue check.
template <class F>
auto spawn(F&& f) {
  using Fn = std::decay_t<F>;
  using R = std::invoke_result_t<Fn&>;
  static_assert(!std::is_reference_v<R>, "a task returns a value, not a reference");
  safepoint();
  Scheduler& s = detail::active_or_throw();
  auto* t = new detail::TaskWith<Fn, R>(Fn(std::forward<F>(f)));
  s.spawn(*t);
  return JoinHandle<R>(t);
}

// Go's sync.WaitGroup in structured form (Go 1.25's WaitGroup.Go): go() counts the task in and
// starts it; wait() returns once all have finished and rethrows the first exception any threw.
class WaitGroup {
 public:
  WaitGroup() = default;
  WaitGroup(const WaitGroup&) = delete;
  WaitGroup& operator=(const WaitGroup&) = delete;
  ~WaitGroup() {
    if ((state_.pending.load(std::memory_order_acquire) & GroupState::kCountMask) != 0 ||
        state_.backend != nullptr) {
      detail::active_scheduler()->wait(state_);
    }
    if (state_.first_error) detail::note_unobserved_exception();
  }

  // A safe point, as spawn().
  template <class F>
  void go(F&& f) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_void_v<std::invoke_result_t<Fn&>>, "WaitGroup tasks return void");
    safepoint();
    Scheduler& s = detail::active_or_throw();
    auto* t = new detail::TaskWith<Fn, void>(Fn(std::forward<F>(f)));
    t->group = &state_;
    state_.pending.fetch_add(1, std::memory_order_relaxed);
    s.spawn(*t);
  }

  void wait() {
    detail::active_or_throw().wait(state_);
    if (state_.first_error) std::rethrow_exception(std::exchange(state_.first_error, nullptr));
  }

 private:
  GroupState state_;
};

// Runs `f`, a call that may block its thread in the kernel, through the scheduler. Go's runtime
// wraps every system call this way (entersyscall/exitsyscall): the goroutine keeps its P, marked
// as in a call, and takes it back with one CAS on return; only if the call lasts does the system
// monitor (sysmon) take the P back and hand it to another thread, so that the P's other
// goroutines keep running. steal-half does the same (--handoff lazy); --handoff eager hands the
// processor over at every call (Go's entersyscallblock), off never. fair and central keep the
// worker blocked with its processor; tbb and serial just call f.
template <class F>
auto blocking(F&& f) {
  Scheduler& s = detail::active_or_throw();
  s.blocking_begin();
  struct End {
    Scheduler& s;
    ~End() { s.blocking_end(); }
  } end{s};
  return std::forward<F>(f)();
}

// ---- Channels, a mutex, yield: Go's other scheduling points -----------------------------------
//
// A task that waits on a channel or a locked mutex parks: under the fiber schedulers it holds
// no thread, and whoever sends it a value or unlocks the mutex readies it the way Go's ready()
// does (steal-half: into the readier's processor's runnext, so that the pair runs on one
// processor, back to back). sync/go_channel.hpp and sync/go_mutex.hpp are Go's algorithms;
// boost-fiber uses Boost.Fiber's own channels and mutex, os-threads parks a thread on a
// condition variable, tbb suspends the task (oneTBB's resumable tasks). A program whose every
// task waits on something no running task can ever send or unlock is stopped with a
// DeadlockError naming each parked task and what it waits on (Go: "all goroutines are asleep -
// deadlock!"), and its tasks unwind: each parked operation throws DeadlockError.

// Go's chan T: unbuffered (capacity 0: a send waits for a receiver) or buffered (a send waits
// only while `capacity` values are queued). T is copied as bytes: a trivially copyable value of
// at most 64 bytes (an int, a pointer, a small struct; send an index or a pointer for more).
// `name` appears in the deadlock report. Made and used inside a run; move-only.
template <class T>
class Channel {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 64,
                "a Channel carries trivially copyable values of at most 64 bytes (copied as bytes, as Go "
                "copies a channel's elements); send an index or a pointer to bigger things");

 public:
  explicit Channel(std::size_t capacity = 0, std::string name = {})
      : core_(detail::active_or_throw().make_channel(capacity, sizeof(T), std::move(name))) {}

  // Go's ch <- v: parks until a receiver takes v or the buffer has room. A safe point. Throws
  // std::logic_error on a closed channel (Go panics).
  void send(const T& v) {
    safepoint();
    core_->send(&v);
  }
  // Go's v, ok := <-ch: parks until a value comes; nullopt once the channel is closed and every
  // buffered value taken. A safe point.
  std::optional<T> recv() {
    safepoint();
    alignas(T) std::byte raw[sizeof(T)];
    if (!core_->recv(raw)) return std::nullopt;
    return std::bit_cast<T>(raw);
  }
  // Go's close(ch): parked receivers get nullopt, parked senders throw. Throws std::logic_error
  // if it is closed already.
  void close() { core_->close(); }

 private:
  std::unique_ptr<ChannelCore> core_;
};

// Go's sync.Mutex (which of its rules each backend keeps: sync/go_mutex.hpp, docs/schedulers.md). A waiter
// parks; lock() is a safe point. Use it with std::lock_guard. Made and used inside a run.
class Mutex {
 public:
  explicit Mutex(std::string name = {}) : core_(detail::active_or_throw().make_mutex(std::move(name))) {}
  void lock() {
    safepoint();
    core_->lock();
  }
  bool try_lock() { return core_->try_lock(); }
  void unlock() { core_->unlock(); }

 private:
  std::unique_ptr<MutexCore> core_;
};

// Go's runtime.Gosched: the calling task goes to the back of the queue (the global queue under
// steal-half) and its processor runs the others first.
inline void yield() { detail::active_or_throw().yield(); }

// Preemption (--preempt safepoint, the fiber schedulers' default): a task that has held its
// processor for 10 ms yields at its next safe point, safepoint() (safepoint.hpp), which spawn,
// WaitGroup::go, every channel and mutex operation and the workloads' loops call, as every Go
// function call checks its prologue. Where it departs from Go 1.14+: Go also stops a goroutine in
// a loop that makes no call, by a signal; schedlab does not (a C++ task cannot be stopped safely
// at any instruction), so such a loop keeps its processor until it ends, as under Go 1.13.

// ---- Waiting for a socket -------------------------------------------------------------------
//
// A task that waits for a socket, as a goroutine in Go's net package does. Under a fiber
// scheduler with its network poller (--netpoll on, the default) the task parks on the runtime's
// epoll poller (runtime/poller.hpp) and its worker runs other tasks until the socket is ready;
// under a backend without one (tbb, openmp, serial, os-threads, boost-fiber) or with
// --netpoll off, it waits in the kernel, poll(2) inside blocking(): the thread is held.
//
// Socket owns a non-blocking descriptor. The first wait registers it with the running
// scheduler's poller (once: epoll's edge-triggered registration lives as long as the descriptor,
// as in Go's netFD); close() or the destructor unregisters it and closes the descriptor. A
// Socket is used by one task at a time and lives inside the run that first waited on it.
//
//   Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
//   if (::connect(s.fd(), ...) < 0 && errno == EINPROGRESS) Tasks::wait_writable(s);  // then SO_ERROR
//   IoResult sent = Tasks::write_full(s, request, n);   // every byte, or sent.error
//   IoResult got = Tasks::read_full(s, reply, n);       // every byte, the peer's end, or got.error

// What read_full and write_full did: bytes moved, and the errno of the call that failed (0 if
// none). read_full returning fewer bytes than asked with error 0 met the peer's end of file.
struct IoResult {
  std::size_t bytes = 0;
  int error = 0;
};

class Socket;
namespace detail {
// A task's wait under the running scheduler (Tasks::wait_readable, wait_writable): the first
// registers s with it (Scheduler::io_register).
void task_wait(Socket& s, IoWait what);
}  // namespace detail

class Socket {
 public:
  Socket() = default;
  // Takes ownership of fd, which must be non-blocking (O_NONBLOCK). -1: no descriptor.
  explicit Socket(int fd) noexcept : fd_(fd) {}
  Socket(Socket&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), watcher_(std::exchange(o.watcher_, nullptr)),
        desc_(std::exchange(o.desc_, nullptr)) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      close();
      fd_ = std::exchange(o.fd_, -1);
      watcher_ = std::exchange(o.watcher_, nullptr);
      desc_ = std::exchange(o.desc_, nullptr);
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

  int fd() const noexcept { return fd_; }
  bool is_open() const noexcept { return fd_ >= 0; }
  // Unregisters the descriptor from the scheduler watching it, if any, and closes it.
  // Idempotent. Never while a task waits on it.
  void close() noexcept;

 private:
  friend void detail::task_wait(Socket& s, IoWait what);  // registers it at its first wait
  int fd_ = -1;
  Scheduler* watcher_ = nullptr;  // the scheduler asked to watch fd_ (its first wait's)
  PollDesc* desc_ = nullptr;      // its poller's registration; nullptr: it waits in the kernel
};

namespace detail {
// The elision's wait: poll(2) on the socket.
void kernel_wait(Socket& s, IoWait what);
// The whole read or write of n bytes on a non-blocking socket, waiting with `wait` whenever the
// kernel says EAGAIN. Writes with MSG_NOSIGNAL on sockets (a reset peer is an error, not a
// SIGPIPE), write(2) on other descriptors.
IoResult read_full(Socket& s, void* buf, std::size_t n, void (*wait)(Socket&, IoWait));
IoResult write_full(Socket& s, const void* buf, std::size_t n, void (*wait)(Socket&, IoWait));
}  // namespace detail

// ---- One source, two programs: with tasks, or the sequential elision ------------------------
//
// A workload writes its body once, as a template over an execution type X, and calls
// X::spawn(f), X::WaitGroup, X::blocking(f) and the socket waits (X::wait_readable(s),
// X::read_full(s, buf, n), ...) where it would call the free functions above:
//
//   template <class X> std::uint64_t fib(int n) {
//     if (n < 2) return n;
//     auto a = X::spawn([n] { return fib<X>(n - 1); });
//     const std::uint64_t b = fib<X>(n - 2);
//     return a.join() + b;
//   }
//
// fib<Tasks> is the parallel program, run by a scheduler. fib<Elision> is its sequential
// elision, as Cilk defines it (delete the spawn and sync keywords and a correct program
// remains): spawn(f) calls f there and then and keeps its value for join(), WaitGroup::go(f)
// calls f, wait() and blocking(f) do nothing but call, and a socket wait is a plain poll(2) of
// that socket (the sequential program's blocking I/O). No task object, virtual call, atomic or
// counter is left, so after inlining it is the plain recursive program a user would write:
// T_S, the time every speedup and work overhead is measured against (docs/schedulers.md, "The baseline").
// One difference in meaning: an exception leaves spawn() under Elision, join() under Tasks.

// The parallel program: tasks on the scheduler whose run() is active.
struct Tasks {
  template <class F>
  static auto spawn(F&& f) {
    return schedlab::spawn(std::forward<F>(f));
  }
  using WaitGroup = schedlab::WaitGroup;
  template <class F>
  static auto blocking(F&& f) {
    return schedlab::blocking(std::forward<F>(f));
  }
  static void wait_readable(Socket& s) { detail::task_wait(s, IoWait::readable); }
  static void wait_writable(Socket& s) { detail::task_wait(s, IoWait::writable); }
  static IoResult read_full(Socket& s, void* buf, std::size_t n) {
    return detail::read_full(s, buf, n, &detail::task_wait);
  }
  static IoResult write_full(Socket& s, const void* buf, std::size_t n) {
    return detail::write_full(s, buf, n, &detail::task_wait);
  }
  template <class T>
  using Channel = schedlab::Channel<T>;
  using Mutex = schedlab::Mutex;
  static void yield() { schedlab::yield(); }
};

namespace detail {
// What Elision::spawn returns: the value, already computed, and join() to hand it back.
template <class R>
struct Computed {
  R value;
  R join() { return std::move(value); }
};
template <>
struct Computed<void> {
  void join() {}
};
}  // namespace detail

// The sequential elision: every spawn is a plain call. Usable outside Scheduler::run().
struct Elision {
  template <class F>
  static auto spawn(F&& f) {
    using R = std::invoke_result_t<std::decay_t<F>&>;
    if constexpr (std::is_void_v<R>) {
      std::forward<F>(f)();
      return detail::Computed<void>{};
    } else {
      return detail::Computed<R>{std::forward<F>(f)()};
    }
  }
  struct WaitGroup {
    template <class F>
    void go(F&& f) {
      std::forward<F>(f)();
    }
    void wait() {}
  };
  template <class F>
  static decltype(auto) blocking(F&& f) {
    return std::forward<F>(f)();
  }
  static void wait_readable(Socket& s) { detail::kernel_wait(s, IoWait::readable); }
  static void wait_writable(Socket& s) { detail::kernel_wait(s, IoWait::writable); }
  static IoResult read_full(Socket& s, void* buf, std::size_t n) {
    return detail::read_full(s, buf, n, &detail::kernel_wait);
  }
  static IoResult write_full(Socket& s, const void* buf, std::size_t n) {
    return detail::write_full(s, buf, n, &detail::kernel_wait);
  }
  // A sequential program needs no lock: one task runs at a time and finishes its critical
  // section before the next starts, so the elision's mutex is nothing at all. A program whose
  // tasks wait for each other's sends has no sequential elision (no Channel here): it is refused
  // (SchedulerEntry::cannot_wait).
  struct Mutex {
    explicit Mutex(const std::string& = {}) {}
    void lock() {}
    bool try_lock() { return true; }
    void unlock() {}
  };
  static void yield() {}
};

}  // namespace schedlab
