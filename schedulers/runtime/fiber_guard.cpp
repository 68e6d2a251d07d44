#include "fiber_guard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "../diagnostics.hpp"
#include "worker.hpp"

namespace schedlab {
namespace {

// Only async-signal-safe work happens in the handler: no allocation, no locks.
std::once_flag g_installed;
thread_local void* t_altstack = nullptr;
constexpr std::size_t kAltStackSize = 64 * 1024;  // SIGSTKSZ is too small for snprintf

void on_segv(int sig, siginfo_t* info, void*) {
  const Worker* w = current_worker_or_null();
  const Fiber* f = w != nullptr ? w->current_fiber() : nullptr;
  const long page = ::sysconf(_SC_PAGESIZE);
  const char* addr = static_cast<const char*>(info->si_addr);
  if (f != nullptr && f->stack_bottom() != nullptr && addr < f->stack_bottom() &&
      addr >= f->stack_bottom() - page) {
    char msg[512];
    const std::size_t size = f->stack_size();
    std::snprintf(msg, sizeof msg,
                  "stack overflow in a task of %s on worker %u: its fiber stack of %zu bytes hit the guard page; "
                  "rerun with a larger --stack-size (e.g. --stack-size %zuK)",
                  overflow_context(), w->index(), size, size * 4 / 1024);
    report_failure(msg);
    ::_exit(1);
  }
  // Not a fiber overflow: a crash, or a SIGSEGV another process sent. Report it and end the
  // process as the crash it is (returning would re-run a faulting instruction, or let a sent
  // signal pass unnoticed).
  report_crash_and_die(sig, info->si_code <= 0 && info->si_pid != ::getpid());
}

}  // namespace

void install_overflow_handler() {
  std::call_once(g_installed, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, nullptr);
  });
}

void arm_overflow_stack() {
  if (t_altstack != nullptr) return;
  void* mem = ::mmap(nullptr, kAltStackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return;  // no diagnosis on this thread, but nothing else changes
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = kAltStackSize;
  if (::sigaltstack(&ss, nullptr) != 0) {
    ::munmap(mem, kAltStackSize);
    return;
  }
  t_altstack = mem;
}

void release_overflow_stack() {
  if (t_altstack == nullptr) return;
  stack_t ss{};
  ss.ss_flags = SS_DISABLE;
  ::sigaltstack(&ss, nullptr);
  ::munmap(t_altstack, kAltStackSize);
  t_altstack = nullptr;
}

}  // namespace schedlab
