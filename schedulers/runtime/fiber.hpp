// fiber.hpp: the one place that switches stacks.
//
// A Fiber is a Boost.Context fiber plus what the rest of the runtime and the sanitizers need to
// know about it: its stack bounds, its ASan fake-stack handle, its TSan fiber. Everything that
// moves execution from one stack to another goes through switch_fiber(), so the sanitizer
// annotations (ASan's start/finish_switch_fiber, TSan's switch_to_fiber) are written once.
//
// A switch carries an action: `after` runs on the target's stack, first thing after the jump,
// once the source fiber's registers are saved. That is the only safe moment to make the source
// fiber visible to other threads (queue its task, return it to a pool): published any earlier,
// another worker could resume a fiber that has not finished switching away. The action is
// handed over in the target Fiber (only the switching thread can touch a fiber that is being
// switched to) and copied onto the target's stack before it runs, because the source stack may
// be resumed, and reused, by another thread the moment the action publishes it.
//
// Boost's resume_with does the same with a callback run "on top" of the target, but costs 45 ns
// per round trip here against 17 ns for a plain resume(), so we use resume() (tests/micro).
#pragma once

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <utility>

#include "../assert.hpp"
#include "stack.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define SCHEDLAB_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define SCHEDLAB_TSAN 1
#endif

namespace schedlab {

class Fiber {
 public:
  using Entry = void (*)(Fiber&);

  // A fiber that runs entry(fiber) on a stack from `stacks` when it is first switched to. entry
  // must return only after exit_requested was set (see request_exit).
  static Fiber* create(StackAllocator& stacks, Entry entry);
  // The calling thread's own stack, so a worker can switch to fibers and back.
  static Fiber* for_current_thread();
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Lowest address and size of the stack: ASan needs them, and a fault just below bottom is this
  // fiber's overflow into its guard page.
  const char* stack_bottom() const noexcept { return bottom_; }
  std::size_t stack_size() const noexcept { return size_; }

  // Set before switching to a pooled fiber to make its entry return; `back` is resumed when it
  // has exited and its stack is freed.
  void request_exit(Fiber& back) noexcept {
    exit_requested_ = true;
    exit_to_ = &back;
  }
  bool exit_requested() const noexcept { return exit_requested_; }

  template <class After>
  friend void switch_fiber(Fiber& from, Fiber& to, After after);
  friend class FiberPool;

 private:
  struct Landing {
    Fiber* from = nullptr;              // whose continuation the arriving resume() returns
    void (*action)(void*) = nullptr;    // runs after the jump, on this fiber's stack
    void* closure = nullptr;            // lives on `from`'s stack until copied by action
  };

  Fiber() = default;
  boost::context::fiber exit_continuation();
  void before_leaving(Fiber& to, bool exiting) noexcept;
  // Runs on this fiber right after a switch into it: saves the source's continuation and runs
  // the switch's action.
  void land(boost::context::fiber&& source) noexcept;

  boost::context::fiber context_;  // the saved continuation while this fiber is not running
  Landing landing_;                // set by whoever switches to this fiber
  const char* bottom_ = nullptr;
  std::size_t size_ = 0;
  Entry entry_ = nullptr;
  bool exit_requested_ = false;
  Fiber* exit_to_ = nullptr;
  Fiber* next_pooled_ = nullptr;  // the link in a FiberPool, while parked in one
  void* asan_fake_stack_ = nullptr;  // ASan: fake stack of this fiber while suspended
  void* tsan_fiber_ = nullptr;       // TSan: its fiber handle
  bool owns_tsan_fiber_ = false;
#if SCHEDLAB_ASSERTIONS
  // Checked builds: some thread is executing on this fiber now. Set on landing, cleared before
  // leaving, so a fiber published by a switch's action reads false to whoever resumes it.
  bool running_ = false;
#endif
};

// A worker's pool of parked fibers (and their stacks): a stack linked through the fibers
// themselves, so that parking one never allocates. Fibers are parked inside a switch's action,
// where an exception (bad_alloc under `ulimit -v`) would have nowhere to go but std::terminate.
// Used only by the worker that owns it.
class FiberPool {
 public:
  FiberPool() = default;
  FiberPool(const FiberPool&) = delete;
  FiberPool& operator=(const FiberPool&) = delete;

  void push(Fiber* f) noexcept {
    SCHEDLAB_ASSERT(f->next_pooled_ == nullptr && f != top_, "a fiber is parked in one pool at a time");
    f->next_pooled_ = top_;
    top_ = f;
  }
  // The fiber parked last (its stack is likeliest to be in cache), or nullptr when empty.
  Fiber* pop() noexcept {
    Fiber* f = top_;
    if (f != nullptr) {
      top_ = f->next_pooled_;
      f->next_pooled_ = nullptr;
    }
    return f;
  }

 private:
  Fiber* top_ = nullptr;
};

// Switches from `from` (the fiber running now) to `to` (a suspended or never-started fiber).
// `after` is copied to `to`'s stack and runs there once `from` is saved; then `to` continues.
// Returns when something switches back to `from`, possibly on another thread: per-thread state
// read before this call is stale afterwards (see worker.hpp, current_worker()).
template <class After>
void switch_fiber(Fiber& from, Fiber& to, After after) {
#if SCHEDLAB_ASSERTIONS
  SCHEDLAB_ASSERT(from.running_, "switch_fiber leaves the fiber that is running now");
  // Two workers resuming one suspended task, or a fiber switching to itself.
  SCHEDLAB_ASSERT(!to.running_, "a fiber switched to is not running anywhere");
#endif
  from.before_leaving(to, /*exiting=*/false);
  to.landing_ = {&from,
                 [](void* closure) {
                   After copy = *static_cast<After*>(closure);  // before anything is published
                   copy();
                 },
                 &after};
  boost::context::fiber source = std::move(to.context_).resume();
  // Back on `from`, resumed by some fiber, possibly on another thread.
  from.land(std::move(source));
}

inline void Fiber::land(boost::context::fiber&& source) noexcept {
#if SCHEDLAB_ASAN
  __sanitizer_finish_switch_fiber(asan_fake_stack_, nullptr, nullptr);
#endif
#if SCHEDLAB_ASSERTIONS
  running_ = true;
#endif
  const Landing l = landing_;
  landing_ = Landing{};
  if (l.from != nullptr) l.from->context_ = std::move(source);
  if (l.action != nullptr) l.action(l.closure);
}

inline void Fiber::before_leaving([[maybe_unused]] Fiber& to, [[maybe_unused]] bool exiting) noexcept {
#if SCHEDLAB_ASSERTIONS
  running_ = false;
#endif
#if SCHEDLAB_ASAN
  // A null save slot tells ASan this stack is gone for good, so it frees its fake frames.
  __sanitizer_start_switch_fiber(exiting ? nullptr : &asan_fake_stack_, to.bottom_, to.size_);
#endif
#if SCHEDLAB_TSAN
  __tsan_switch_to_fiber(to.tsan_fiber_, 0);
#endif
}


}  // namespace schedlab
