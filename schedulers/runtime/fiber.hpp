// fiber.hpp: the one place that switches stacks.
//
// A Fiber is a Boost.Context execution context (the fcontext layer under boost::context::fiber:
// make_fcontext, jump_fcontext, ontop_fcontext) plus what the rest of the runtime and the
// sanitizers need to know about it: its stack, its ASan fake-stack handle, its TSan fiber.
// Everything that moves execution from one stack to another goes through switch_fiber(), so the
// sanitizer annotations (ASan's start/finish_switch_fiber, TSan's switch_to_fiber) are written
// once.
//
// A switch carries an action: `after` runs on the target's stack, first thing after the jump,
// once the source fiber's registers are saved. That is the only safe moment to make the source
// fiber visible to other threads (queue its task, return it to a pool): published any earlier,
// another worker could resume a fiber that has not finished switching away. The action travels
// in a Landing on the source's stack, whose address jump_fcontext hands to the target with the
// source's saved context; the target copies what it needs (the action's closure included)
// before the action publishes anything, because the source stack may be resumed, and reused, by
// another thread the moment it is published.
//
// Why the fcontext layer and not boost::context::fiber. fiber::resume() passes no data, so the
// action had to be left in the target Fiber and cleared again, and the source's continuation
// came back as a fiber object moved into place: ~14 instructions per switch of bookkeeping,
// one switch per task of fib-go (callgrind, docs/platform.md). resume_with does what we need
// "on top" of the target but costs 45 ns per round trip here against 17 ns for resume()
// (tests/micro). Creating a context also costs no initial round trip here (fiber's constructor
// makes one to set up its record).
#pragma once

#include <boost/context/detail/fcontext.hpp>
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
  using Transfer = boost::context::detail::transfer_t;

  // What a switch hands to the fiber it switches to (jump_fcontext's data pointer). It lives in
  // switch_fiber's frame on the source's stack, which stays as it is until the action has run
  // (nothing else can resume the source before the action publishes it).
  struct Landing {
    Fiber* from;                // saves its context here
    Fiber* to;                  // the fiber arriving (a new fiber's entry learns who it is)
    void (*action)(void*);      // runs after the jump, on the target's stack
    void* closure;              // copied by action before it publishes anything
  };

  Fiber() = default;
  // A new fiber's first code, on its own stack.
  [[noreturn]] static void entry_point(Transfer from) noexcept;
  // Runs on the stack of the fiber an exiting one returns to, on top of it: gives the exited
  // fiber's stack back, which nothing may do while still running on it.
  static Transfer release_stack(Transfer exited) noexcept;
  void before_leaving(Fiber& to, bool exiting) noexcept;
  // Runs on this fiber right after a switch into it: saves the source's context and runs the
  // switch's action. `arrived.data` is null when the source exited (nothing to save or run).
  void land(Transfer arrived) noexcept;

  boost::context::detail::fcontext_t context_ = nullptr;  // saved while this fiber is not running
  boost::context::stack_context stack_{};  // this fiber's own stack (none for a thread's stack)
  StackAllocator* stacks_ = nullptr;       // where stack_ goes back when the fiber exits
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
  SCHEDLAB_ASSERT(to.context_ != nullptr, "a fiber switched to has a saved context");
  from.before_leaving(to, /*exiting=*/false);
  Fiber::Landing landing{&from, &to,
                         [](void* closure) {
                           After copy = *static_cast<After*>(closure);  // before anything is published
                           copy();
                         },
                         &after};
  void* const target = to.context_;
  to.context_ = nullptr;
  const Fiber::Transfer arrived = boost::context::detail::jump_fcontext(target, &landing);
  // Back on `from`, resumed by some fiber, possibly on another thread.
  from.land(arrived);
}

inline void Fiber::land(Transfer arrived) noexcept {
#if SCHEDLAB_ASAN
  __sanitizer_finish_switch_fiber(asan_fake_stack_, nullptr, nullptr);
#endif
#if SCHEDLAB_ASSERTIONS
  running_ = true;
#endif
  const auto* l = static_cast<const Landing*>(arrived.data);
  if (l == nullptr) return;  // the source exited: its context is gone, and it has no action
  void (*const action)(void*) = l->action;
  void* const closure = l->closure;
  l->from->context_ = arrived.fctx;
  action(closure);
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
