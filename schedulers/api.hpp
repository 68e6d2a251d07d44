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
// Under the fiber schedulers a task that joins an unfinished task suspends and its worker thread
// runs other tasks. Under tbb a join is a task_group wait, under os-threads a thread join, under
// serial spawn is a plain call. Workloads cannot tell which is running them. (The end of this
// file has the execution types a workload's body is written over, Tasks and Elision.)
//
// Rules: a JoinHandle or WaitGroup joins in its destructor if nobody did (so the structure is
// always a tree and run() returning means every task is done). An exception that nobody joined
// is reported by Scheduler::run() as an error rather than dropped. WaitGroup::go() may be called
// by the task that owns the group and by the group's own tasks while they run (a task that adds
// its successor before it finishes keeps the count above zero, as with Go's wg.Add).
#pragma once

#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "scheduler.hpp"

namespace schedlab {

namespace detail {

inline Scheduler& active_or_throw() {
  Scheduler* s = active_scheduler();
  if (s == nullptr) throw std::logic_error("schedlab task API used outside Scheduler::run()");
  return *s;
}

template <class R>
struct ResultSlot {
  std::optional<R> value;
  std::exception_ptr error;
  template <class F>
  void fill(F& fn) noexcept {
    try {
      value.emplace(fn());
    } catch (...) {
      error = std::current_exception();
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
  void fill(F& fn) noexcept {
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  }
  void take() {
    if (error) std::rethrow_exception(error);
  }
};

// A task with its callable and result slot in one allocation.
template <class F, class R>
struct TaskWith final : Task {
  F fn;
  ResultSlot<R> result;

  explicit TaskWith(F f) : fn(std::move(f)) {
    invoke = &TaskWith::invoke_body;
    destroy = &TaskWith::destroy_self;
  }

  // Tasks are small and short-lived; a per-thread allocator keeps malloc off the spawn path.
  static void* operator new(std::size_t size) { return allocate_task_memory(size); }
  static void operator delete(void* p) noexcept { free_task_memory(p); }

  static void invoke_body(Task& t) noexcept {
    auto& self = static_cast<TaskWith&>(t);
    self.result.fill(self.fn);
    // A group task has no handle to carry its exception: the group keeps the first one.
    if (self.group != nullptr && self.result.error) self.group->record_error(self.result.error);
  }
  static void destroy_self(Task& t) noexcept { delete static_cast<TaskWith*>(&t); }
};

}  // namespace detail

// The joinable handle of a spawned task. Move-only; join() once.
template <class R>
class JoinHandle {
 public:
  JoinHandle(JoinHandle&& o) noexcept
      : task_(std::exchange(o.task_, nullptr)), slot_(std::exchange(o.slot_, nullptr)) {}
  JoinHandle& operator=(JoinHandle&& o) noexcept {
    if (this != &o) {
      release();
      task_ = std::exchange(o.task_, nullptr);
      slot_ = std::exchange(o.slot_, nullptr);
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
    detail::active_or_throw().join(*task_);
    Task* t = std::exchange(task_, nullptr);
    auto* slot = std::exchange(slot_, nullptr);
    struct Free {
      Task* t;
      ~Free() { t->destroy(*t); }
    } free{t};
    return slot->take();
  }

 private:
  template <class F>
  friend auto spawn(F&& f);
  JoinHandle(Task* t, detail::ResultSlot<R>* slot) : task_(t), slot_(slot) {}

  void release() noexcept {
    if (task_ == nullptr) return;
    detail::active_scheduler()->join(*task_);
    if (slot_->error) detail::note_unobserved_exception();
    task_->destroy(*task_);
    task_ = nullptr;
  }

  Task* task_ = nullptr;
  detail::ResultSlot<R>* slot_ = nullptr;
};

// Starts `f` as a new task and returns its handle.
template <class F>
auto spawn(F&& f) {
  using Fn = std::decay_t<F>;
  using R = std::invoke_result_t<Fn&>;
  static_assert(!std::is_reference_v<R>, "a task returns a value, not a reference");
  Scheduler& s = detail::active_or_throw();
  auto* t = new detail::TaskWith<Fn, R>(Fn(std::forward<F>(f)));
  s.spawn(*t);
  return JoinHandle<R>(t, &t->result);
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

  template <class F>
  void go(F&& f) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_void_v<std::invoke_result_t<Fn&>>, "WaitGroup tasks return void");
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

// ---- One source, two programs: with tasks, or the sequential elision ------------------------
//
// A workload writes its body once, as a template over an execution type X, and calls
// X::spawn(f), X::WaitGroup and X::blocking(f) where it would call the free functions above:
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
// calls f, wait() and blocking(f) do nothing but call. No task object, virtual call, atomic or
// counter is left, so after inlining it is the plain recursive program a user would write:
// T_S, the time every speedup and work overhead is measured against (README, "elision").
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
};

}  // namespace schedlab
