#include "fiber_guard.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "../diagnostics.hpp"
#include "worker.hpp"

namespace schedlab {
namespace {

// Only async-signal-safe work happens in the handler: no allocation, no locks. Everything it
// reads is plain memory: trivially destructible thread_locals (no TLS wrapper function, which
// could allocate on a thread's first access) and the fixed buffers of diagnostics.cpp.

constexpr std::size_t kAltStackSize = 64 * 1024;  // SIGSTKSZ is too small for snprintf
// The least alternate stack the handler trusts (another one, e.g. AddressSanitizer's, is kept
// if it is at least this large).
constexpr std::size_t kMinAltStack = TaskThreadGuard::kAltStackBytes;

std::once_flag g_installed;

// Several threads may overflow at once (two tasks recursing alike): the first reports and ends
// the process, the others wait for it, so that the report is one line.
std::atomic<bool> g_reporting{false};
void claim_the_report() noexcept {
  if (g_reporting.exchange(true)) {
    for (;;) ::pause();
  }
}

// The alternate signal stack this file mapped for the calling thread; unmapped when the thread
// exits (its destructor) or by release_overflow_stack(). Never read by the handler.
struct MappedAltStack {
  void* mem = nullptr;
  ~MappedAltStack() { release(); }
  void release() noexcept {
    if (mem == nullptr) return;
    stack_t ss{};
    ss.ss_flags = SS_DISABLE;
    ::sigaltstack(&ss, nullptr);
    ::munmap(mem, kAltStackSize);
    mem = nullptr;
  }
};
thread_local MappedAltStack t_mapped;

// What the handler knows of the calling thread's stacks (set when the thread is armed).
struct ThreadStack {
  const char* lo = nullptr;  // the lowest usable byte of the thread's own stack; null: not armed
  const char* hi = nullptr;  // one past its highest
  std::size_t bytes = 0;     // its size as the report names it (what the backend asked for)
  std::size_t fiber_stack_bytes = 0;  // non-zero: the thread also runs Boost.Fiber fibers of this size
  ThreadStackFix fix = ThreadStackFix::stack_limit;
};
constinit thread_local ThreadStack t_stack{};

// True if the calling thread has an enabled alternate signal stack of at least kMinAltStack.
bool has_alt_stack() noexcept {
  stack_t old{};
  return ::sigaltstack(nullptr, &old) == 0 && (old.ss_flags & SS_DISABLE) == 0 && old.ss_size >= kMinAltStack;
}

// The interrupted stack pointer; null where this architecture is not known here (then only the
// fiber runtime's and the threads' own stacks are checked, by the fault's address alone).
const char* stack_pointer(const void* context) noexcept {
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return reinterpret_cast<const char*>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  return reinterpret_cast<const char*>(uc->uc_mcontext.sp);
#else
  (void)uc;
  return nullptr;
#endif
}

bool near(const char* addr, const char* point) noexcept {
  return addr + kFrameReach >= point && addr < point + kFrameReach;
}

// "64 KiB", "128 MiB": a stack size as a user would type it back. The main thread's is its
// RLIMIT_STACK less what the kernel put above the stack's start (the environment, a few pages
// here): within 64 KiB of a whole MiB it is named by that MiB.
void format_size(char* out, std::size_t size, std::size_t bytes) noexcept {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  const std::size_t whole = (bytes + kMiB / 2) / kMiB;
  const std::size_t off = bytes > whole * kMiB ? bytes - whole * kMiB : whole * kMiB - bytes;
  if (bytes >= kMiB && off <= kFrameReach) {
    std::snprintf(out, size, "%zu MiB", whole);
  } else if (bytes >= kMiB) {
    std::snprintf(out, size, "%.1f MiB", static_cast<double>(bytes) / static_cast<double>(1 << 20));
  } else {
    std::snprintf(out, size, "%zu KiB", (bytes + 1023) / 1024);
  }
}

[[noreturn]] void report_thread_overflow(const ThreadStack& t) noexcept {
  claim_the_report();
  const std::size_t bytes = t.bytes;
  char size[32];
  format_size(size, sizeof size, bytes);
  // The suggestion doubles the stack (at least to the next whole unit): a deeper recursion than
  // this one needs the user's own estimate.
  const std::size_t double_mib = (2 * bytes + (std::size_t{1} << 20) - 1) >> 20;
  char fix[160];
  switch (t.fix) {
    case ThreadStackFix::thread_stack_option:
      std::snprintf(fix, sizeof fix, "rerun with a larger --thread-stack (e.g. --thread-stack %zuM)", double_mib);
      break;
    case ThreadStackFix::stack_size_option:
      std::snprintf(fix, sizeof fix, "rerun with a larger --stack-size (e.g. --stack-size %zuK)", bytes * 4 / 1024);
      break;
    case ThreadStackFix::stack_limit:
      std::snprintf(fix, sizeof fix,
                    "raise the stack limit of the shell that starts schedlab (e.g. ulimit -s %zu) or use a smaller "
                    "problem",
                    double_mib * 1024);
      break;
  }
  char msg[512];
  std::snprintf(msg, sizeof msg, "stack overflow in a task of %s: the thread stack of %s is too small for this recursion; %s",
                overflow_context(), size, fix);
  report_failure(msg);
  ::_exit(1);
}

[[noreturn]] void report_fiber_overflow(std::size_t size, const char* where) noexcept {
  claim_the_report();
  char msg[512];
  std::snprintf(msg, sizeof msg,
                "stack overflow in a task of %s%s: its fiber stack of %zu bytes hit the guard page; "
                "rerun with a larger --stack-size (e.g. --stack-size %zuK)",
                overflow_context(), where, size, size * 4 / 1024);
  report_failure(msg);
  ::_exit(1);
}

void on_segv(int sig, siginfo_t* info, void* context) {
  const char* addr = static_cast<const char*>(info->si_addr);
  // A fiber runtime worker's fiber: the guard page below the fiber it runs.
  const Worker* w = current_worker_or_null();
  const Fiber* f = w != nullptr ? w->current_fiber() : nullptr;
  const long page = ::sysconf(_SC_PAGESIZE);
  if (f != nullptr && f->stack_bottom() != nullptr && addr < f->stack_bottom() &&
      addr >= f->stack_bottom() - page) {
    char where[32];
    std::snprintf(where, sizeof where, " on worker %u", w->index());
    report_fiber_overflow(f->stack_size(), where);
  }
  const ThreadStack& t = t_stack;
  if (t.lo != nullptr) {
    // Where the thread was running: on its own stack (down to a frame below it), or on a fiber's.
    const char* sp = stack_pointer(context);
    const bool on_thread_stack = sp == nullptr || (sp + kFrameReach >= t.lo && sp < t.hi);
    // The thread's own stack: a fault just below (or, os-threads' estimated bounds, just above)
    // its lowest usable byte.
    if (on_thread_stack && addr + kFrameReach >= t.lo && addr < t.lo + kFrameReach) report_thread_overflow(t);
    // A Boost.Fiber fiber: a fault next to the stack pointer, off the thread's stack.
    if (t.fiber_stack_bytes != 0 && !on_thread_stack && near(addr, sp)) report_fiber_overflow(t.fiber_stack_bytes, "");
  }
  // Not an overflow: a crash, or a SIGSEGV another process sent. Report it and end the process
  // as the crash it is (returning would re-run a faulting instruction, or let a sent signal pass
  // unnoticed).
  report_crash_and_die(sig, info->si_code <= 0 && info->si_pid != ::getpid());
}

// Gives the calling thread a mapped alternate signal stack unless it has one.
void map_alt_stack() noexcept {
  if (t_mapped.mem != nullptr || has_alt_stack()) return;
  void* mem = ::mmap(nullptr, kAltStackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return;  // no diagnosis on this thread, but nothing else changes
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = kAltStackSize;
  if (::sigaltstack(&ss, nullptr) != 0) {
    ::munmap(mem, kAltStackSize);
    return;
  }
  t_mapped.mem = mem;
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

void arm_overflow_stack() { map_alt_stack(); }

void release_overflow_stack() { t_mapped.release(); }

std::size_t guard_task_thread(ThreadStackFix fix, std::size_t fiber_stack_bytes) {
  ThreadStack& t = t_stack;
  if (t.lo == nullptr) {
    install_overflow_handler();
    map_alt_stack();
    pthread_attr_t attr;
    if (::pthread_getattr_np(::pthread_self(), &attr) == 0) {
      void* lo = nullptr;
      std::size_t size = 0;
      if (::pthread_attr_getstack(&attr, &lo, &size) == 0 && lo != nullptr) {
        t.hi = static_cast<const char*>(lo) + size;
        t.lo = static_cast<const char*>(lo);
        t.bytes = size;
      }
      ::pthread_attr_destroy(&attr);
    }
  }
  t.fix = fix;
  t.fiber_stack_bytes = fiber_stack_bytes;
  return t.bytes;
}

TaskThreadGuard::TaskThreadGuard(std::size_t stack_bytes) noexcept {
  install_overflow_handler();
  if (!has_alt_stack()) {
    stack_t ss{};
    ss.ss_sp = alt_stack_;
    ss.ss_size = sizeof alt_stack_;
    armed_ = ::sigaltstack(&ss, nullptr) == 0;
  }
  // The task's frames lie below this object, stack_bytes of them (the thread's stack is this
  // object's size larger; its TLS and first frames above it are a few KiB, within kFrameReach).
  ThreadStack& t = t_stack;
  t.hi = reinterpret_cast<const char*>(this) + sizeof *this;
  t.lo = reinterpret_cast<const char*>(this) - stack_bytes;
  t.bytes = stack_bytes;
  t.fix = ThreadStackFix::stack_size_option;
  t.fiber_stack_bytes = 0;
}

TaskThreadGuard::~TaskThreadGuard() {
  t_stack = ThreadStack{};
  if (armed_) {
    stack_t ss{};
    ss.ss_flags = SS_DISABLE;
    ::sigaltstack(&ss, nullptr);
  }
}

}  // namespace schedlab
