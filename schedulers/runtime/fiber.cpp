#include "fiber.hpp"

#include <pthread.h>

#include <boost/context/preallocated.hpp>
#include <memory>

namespace schedlab {

Fiber* Fiber::create(StackAllocator& stacks, Entry entry) {
  std::unique_ptr<Fiber> f(new Fiber());
  boost::context::stack_context sctx = stacks.allocate();
  f->bottom_ = static_cast<const char*>(sctx.sp) - sctx.size;
  f->size_ = sctx.size;
  f->entry_ = entry;
#if SCHEDLAB_TSAN
  f->tsan_fiber_ = __tsan_create_fiber(0);
  f->owns_tsan_fiber_ = true;
#endif
  Fiber* self = f.get();
  // Boost places its fiber record at the top of our stack and frees the stack through
  // StackAllocatorRef when the entry function returns.
  f->context_ = boost::context::fiber(
      std::allocator_arg, boost::context::preallocated(sctx.sp, sctx.size, sctx),
      StackAllocatorRef{&stacks}, [self](boost::context::fiber&& source) -> boost::context::fiber {
        self->land(std::move(source));
        if (!self->exit_requested_) self->entry_(*self);
        return self->exit_continuation();
      });
  return f.release();
}

Fiber* Fiber::for_current_thread() {
  auto* f = new Fiber();
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      f->bottom_ = static_cast<const char*>(addr);
      f->size_ = size;
    }
    pthread_attr_destroy(&attr);
  }
#if SCHEDLAB_TSAN
  f->tsan_fiber_ = __tsan_get_current_fiber();
#endif
#if SCHEDLAB_ASSERTIONS
  f->running_ = true;  // the calling thread is on it
#endif
  return f;
}

Fiber::~Fiber() {
#if SCHEDLAB_TSAN
  if (owns_tsan_fiber_) __tsan_destroy_fiber(tsan_fiber_);
#endif
}

// Runs on the exiting fiber's stack, last thing before Boost frees that stack and jumps to the
// fiber that asked for the exit (it is waiting in switch_fiber, its context saved in context_).
boost::context::fiber Fiber::exit_continuation() {
  Fiber& back = *exit_to_;
  before_leaving(back, /*exiting=*/true);
  back.landing_ = Landing{};  // our continuation dies with us: nothing to save, nothing to run
  return std::move(back.context_);
}

}  // namespace schedlab
