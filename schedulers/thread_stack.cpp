// thread_stack.cpp: threads with a chosen stack (thread_stack.hpp).
#include "thread_stack.hpp"

#include <system_error>
#include <utility>

#include "scheduler.hpp"

namespace schedlab {
namespace {

std::mutex& default_stack_mutex() {
  static std::mutex m;
  return m;
}

// The process default's stack size now (pthread_getattr_default_np).
std::size_t default_stack_size() {
  pthread_attr_t attr;
  if (int rc = ::pthread_getattr_default_np(&attr); rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_getattr_default_np");
  std::size_t size = 0;
  ::pthread_attr_getstacksize(&attr, &size);
  ::pthread_attr_destroy(&attr);
  return size;
}

void set_default_stack_size(std::size_t bytes) {
  pthread_attr_t attr;
  if (int rc = ::pthread_getattr_default_np(&attr); rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_getattr_default_np");
  int rc = ::pthread_attr_setstacksize(&attr, bytes);
  if (rc == 0) rc = ::pthread_setattr_default_np(&attr);
  ::pthread_attr_destroy(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_setattr_default_np");
}

}  // namespace

std::string stack_size_word(std::size_t bytes) {
  if (bytes != 0 && bytes % (std::size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes != 0 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

SizedThread::SizedThread(std::size_t bytes, std::function<void()> body, const char* which) : body_(std::move(body)) {
  pthread_attr_t attr;
  int rc = ::pthread_attr_init(&attr);
  if (rc == 0) {
    rc = ::pthread_attr_setstacksize(&attr, bytes);
    if (rc == 0) rc = ::pthread_create(&thread_, &attr, &SizedThread::main, this);
    ::pthread_attr_destroy(&attr);
  }
  if (rc != 0) throw worker_thread_refused(which, rc);
}

SizedThread::~SizedThread() { ::pthread_join(thread_, nullptr); }

void* SizedThread::main(void* self) {
  static_cast<SizedThread*>(self)->body_();
  return nullptr;
}

DefaultThreadStack::DefaultThreadStack(std::size_t bytes) : lock_(default_stack_mutex()) {
  previous_ = default_stack_size();
  set_default_stack_size(bytes);
}

DefaultThreadStack::~DefaultThreadStack() {
  try {
    set_default_stack_size(previous_);
  } catch (const std::system_error&) {
    // The previous value was accepted once; glibc has no reason to refuse it now.
  }
}

}  // namespace schedlab
