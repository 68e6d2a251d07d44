// root_handoff.hpp: a run handed from the harness thread to a thread of the backend's own.
//
// openmp starts its parallel regions from a master thread of its own (libgomp keeps a thread
// pool per thread that starts regions) and tbb runs each root from a root thread of its own (for
// its stack, thread_stack.hpp): Scheduler::run_root, on the harness thread, hands the root over
// and waits for it. Two thread wake-ups per run, a few microseconds here.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>

namespace schedlab {

class RootHandOff {
 public:
  using Root = std::function<void()>;

  // The harness thread: has `root` run by the serving thread, waits for it, and rethrows what it
  // threw. One run at a time. `watch`, if given, is called every 100 ms while the root runs
  // (a deadlock watch), without the lock.
  void run(const Root& root, const std::function<void()>& watch = nullptr) {
    std::unique_lock lock(mutex_);
    root_ = &root;
    error_ = nullptr;
    done_ = false;
    changed_.notify_all();
    while (!done_) {
      if (!watch) {
        changed_.wait(lock, [this] { return done_; });
      } else if (!changed_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; })) {
        lock.unlock();
        watch();
        lock.lock();
      }
    }
    root_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

  // The serving thread: runs each root handed over through `body` (which runs it, in a region or
  // an arena), until stop(). `body`'s exceptions go back to run().
  void serve(const std::function<void(const Root&)>& body) noexcept {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return stopping_ || (root_ != nullptr && !done_); });
      if (stopping_) return;
      const Root& root = *root_;
      lock.unlock();
      std::exception_ptr error;
      try {
        body(root);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      error_ = error;
      done_ = true;
      changed_.notify_all();
    }
  }

  // Any thread: serve() returns once it is not running a root.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;  // any field below changed
  const Root* root_ = nullptr;
  bool done_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
};

}  // namespace schedlab
