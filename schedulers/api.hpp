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
// serial spawn is a plain call. Workloads cannot tell which is running them.
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

#include "assert.hpp"
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

// Starts `f` as a new task and returns its handle.
template <class F>
auto spawn(F&& f) {
  using Fn = std::decay_t<F>;
  using R = std::invoke_result_t<Fn&>;
  static_assert(!std::is_reference_v<R>, "a task returns a value, not a reference");
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

// Runs `f`, a call that may block its thread in the kernel, through the scheduler: steal-half
// hands its processor to another thread for the duration (Go's entersyscall/exitsyscall).
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

}  // namespace schedlab
