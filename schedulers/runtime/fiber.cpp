#include "fiber.hpp"

#include <memory>

namespace schedlab {

namespace ctx = boost::context::detail;

Fiber* Fiber::create(StackAllocator& stacks, Entry entry) {
  std::unique_ptr<Fiber> f(new Fiber());
  f->stack_ = stacks.allocate();
  f->stacks_ = &stacks;
  f->bottom_ = static_cast<const char*>(f->stack_.sp) - f->stack_.size;
  f->size_ = f->stack_.size;
  f->entry_ = entry;
#if SCHEDLAB_TSAN
  f->tsan_fiber_ = __tsan_create_fiber(0);
  f->owns_tsan_fiber_ = true;
#endif
  // The context starts in entry_point at the first switch into it; the Landing of that switch
  // says which Fiber it is.
  f->context_ = ctx::make_fcontext(f->stack_.sp, f->stack_.size, &Fiber::entry_point);
  return f.release();
}

Fiber* Fiber::for_current_thread() {
  auto* f = new Fiber();
  const StackRange own = current_thread_stack();
  f->bottom_ = own.low;
  f->size_ = own.size;
#if SCHEDLAB_TSAN
  f->tsan_fiber_ = __tsan_get_current_fiber();
#endif
#if SCHEDLAB_ASSERTIONS
  f->running_ = true;  // the calling thread is on it
#endif
  return f;
}

Fiber::~Fiber() {
  SCHEDLAB_ASSERT(stacks_ == nullptr || context_ == nullptr,
                  "a fiber with a stack is destroyed only after it exited (or never, if abandoned)");
#if SCHEDLAB_TSAN
  if (owns_tsan_fiber_) __tsan_destroy_fiber(tsan_fiber_);
#endif
}

void Fiber::entry_point(Transfer from) noexcept {
  Fiber* self = static_cast<const Landing*>(from.data)->to;
  self->land(from);
  if (!self->exit_requested_) self->entry_(*self);
  // The entry returned after request_exit: switch to the fiber that asked, and give this stack
  // back from there (release_stack), since nothing may free a stack while running on it.
  Fiber& back = *self->exit_to_;
  self->before_leaving(back, /*exiting=*/true);
  void* const target = back.context_;
  back.context_ = nullptr;
  ctx::ontop_fcontext(target, self, &Fiber::release_stack);
  __builtin_unreachable();  // nothing resumes an exited fiber
}

ctx::transfer_t Fiber::release_stack(Transfer exited) noexcept {
  auto* f = static_cast<Fiber*>(exited.data);
  f->stacks_->deallocate(f->stack_);
  f->stacks_ = nullptr;
  // Returned by the jump_fcontext that `back` is waiting in: no context to save, no action.
  return {nullptr, nullptr};
}

}  // namespace schedlab
