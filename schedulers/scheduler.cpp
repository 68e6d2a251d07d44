#include "scheduler.hpp"

#include <poll.h>

#include <atomic>
#include <cerrno>
#include <system_error>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "errno_text.hpp"
#include "sync/go_channel.hpp"
#include "sync/go_mutex.hpp"

namespace schedlab {
namespace {
std::atomic<std::uint64_t> g_unobserved{0};
}  // namespace

namespace detail {
void note_unobserved_exception() noexcept { g_unobserved.fetch_add(1, std::memory_order_relaxed); }

void preempt_slow() {
  if (Scheduler* s = active_scheduler()) s->preempt_point();
}

void wait_in_kernel(int fd, IoWait what) {
  pollfd p{fd, static_cast<short>(what == IoWait::readable ? POLLIN : POLLOUT), 0};
  while (::poll(&p, 1, -1) < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
  }
}

}  // namespace detail

ResourceError worker_thread_refused(const std::string& which, int error) {
  return ResourceError("cannot start worker thread " + which + ": " + errno_text(error) +
                       ": the process's limit on threads or memory is reached (ulimit -u, ulimit -v); use fewer "
                       "--threads or raise the limit");
}

void worker_out_of_memory(char* out, std::size_t size, unsigned number, unsigned threads, const char* what,
                          const char* cause) noexcept {
  std::snprintf(out, size,
                "worker thread %u of %u cannot get %s: the process's memory limit is reached (ulimit -v); use fewer "
                "--threads or raise the limit (%s)",
                number, threads, what, cause);
}

void Scheduler::io_wait(int fd, PollDesc* /*desc*/, IoWait what) {
  blocking_begin();
  struct End {
    Scheduler& s;
    ~End() { s.blocking_end(); }
  } end{*this};
  detail::wait_in_kernel(fd, what);
}

std::unique_ptr<ChannelCore> Scheduler::make_channel(std::size_t capacity, std::size_t elem_size, std::string name) {
  return std::make_unique<GoChannel>(*this, capacity, elem_size, std::move(name));
}

std::unique_ptr<MutexCore> Scheduler::make_mutex(std::string name) {
  return std::make_unique<GoMutex>(*this, std::move(name));
}

void Scheduler::park(Waiter& /*w*/, void (*unlock)(void*), void* lock) {
  unlock(lock);
  throw std::logic_error("this scheduler cannot park a task, so a task cannot wait on a channel or a locked mutex "
                         "under it (schedlab run refuses such workloads for it before they start)");
}

void Scheduler::ready(Waiter& /*w*/) {
  throw std::logic_error("this scheduler cannot park a task, so it has none to ready");
}

std::string Scheduler::report_and_abandon_sync_waits(const std::string& header, const std::string& detail) {
  std::size_t parked = 0;
  const std::string waits = sync_registry_.describe_waiters(&parked);
  if (parked == 0) return {};
  std::string report = header + " (Go: \"all goroutines are asleep - deadlock!\"): " + std::to_string(parked) +
                       " task(s) parked on a channel or mutex that no running task can ready; the run is stopped "
                       "and its tasks unwound (a workload or scheduler bug, not a slow run):" +
                       waits + detail;
  sync_registry_.abandon_all(*this);
  return report;
}

void Scheduler::run(const std::function<void()>& root) {
  Scheduler* expected = nullptr;
  if (!detail::g_active_scheduler.compare_exchange_strong(expected, this, std::memory_order_acq_rel)) {
    throw std::logic_error("another Scheduler::run() is active in this process");
  }
  struct Deactivate {
    ~Deactivate() { detail::g_active_scheduler.store(nullptr, std::memory_order_release); }
  } deactivate;
  const std::uint64_t unobserved_before = g_unobserved.load(std::memory_order_relaxed);
  run_root(root);
  const std::uint64_t lost = g_unobserved.load(std::memory_order_relaxed) - unobserved_before;
  if (lost != 0) {
    throw std::runtime_error(std::to_string(lost) +
                             " task exception(s) were never observed: join every JoinHandle "
                             "and wait every WaitGroup whose tasks may throw");
  }
}

}  // namespace schedlab
