#include "fiber_guard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "../diagnostics.hpp"
#include "worker.hpp"

namespace schedlab {
namespace {

// The label is copied into a fixed buffer so the handler reads plain memory (no allocation,
// no locks: only async-signal-safe work happens in the handler).
char g_context[256] = "a task";
std::once_flag g_installed;
// Written between runs only (see set_overflow_report), read by the handler.
std::string g_report_path, g_report_tmp, g_report_text;
thread_local void* t_altstack = nullptr;
constexpr std::size_t kAltStackSize = 64 * 1024;  // SIGSTKSZ is too small for snprintf

void write_all(int fd, const char* text, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

void on_segv(int sig, siginfo_t* info, void*) {
  const Worker* w = current_worker_or_null();
  const Fiber* f = w != nullptr ? w->current_fiber() : nullptr;
  const long page = ::sysconf(_SC_PAGESIZE);
  const char* addr = static_cast<const char*>(info->si_addr);
  if (f != nullptr && f->stack_bottom() != nullptr && addr < f->stack_bottom() &&
      addr >= f->stack_bottom() - page) {
    char msg[512];
    const std::size_t size = f->stack_size();
    const int n = std::snprintf(msg, sizeof msg,
                                "schedlab: error: stack overflow in a task of %s on worker %u: its fiber "
                                "stack of %zu bytes hit the guard page; rerun with a larger --stack-size "
                                "(e.g. --stack-size %zuK)\n",
                                g_context, w->index(), size, size * 4 / 1024);
    if (n > 0) {
      write_all(STDERR_FILENO, msg,
                static_cast<std::size_t>(n) < sizeof msg ? static_cast<std::size_t>(n) : sizeof msg - 1);
    }
    if (!g_report_path.empty()) {  // open, write, close and rename are async-signal-safe
      const int fd = ::open(g_report_tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) {
        write_all(fd, g_report_text.data(), g_report_text.size());
        ::close(fd);
        ::rename(g_report_tmp.c_str(), g_report_path.c_str());
      }
    }
    ::_exit(1);
  }
  // Not a fiber overflow: crash as the program would have without us.
  ::signal(sig, SIG_DFL);
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

void set_overflow_report(const std::string& path, const std::string& text) {
  g_report_path = path;
  g_report_tmp = path.empty() ? std::string() : path + ".tmp";
  g_report_text = text;
}

void set_overflow_context(const char* label) noexcept {
  std::strncpy(g_context, label, sizeof g_context - 1);
  g_context[sizeof g_context - 1] = '\0';
}

}  // namespace schedlab
