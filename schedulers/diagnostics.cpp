// diagnostics.cpp: the prepared last words and their writers (diagnostics.hpp), and the handler
// of the fatal signals other than SIGSEGV (runtime/fiber_guard.cpp has that one: a stack
// overflow, or a crash reported here).
//
// Everything from write_* down runs in signal handlers or in the watcher of a process that is
// about to _exit: no allocation, no locks, no stdio; only open, write, close, rename, sigaction,
// raise and plain memory.
//
// The texts are replaced while the process runs and read by whichever thread ends it. A reader
// first counts itself in g_dying and then loads g_words; a writer publishes the new texts and
// frees the old ones only while nobody is dying. (seq_cst: if the writer sees no one dying, the
// reader's load comes after the writer's exchange and reads the new texts.) Once a thread is
// dying, replaced texts are leaked: the process is about to end.
#include "diagnostics.hpp"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>

#include "runtime/fiber_guard.hpp"

namespace schedlab {
namespace {

// The label is copied into a fixed buffer so that a handler reads plain memory.
char g_context[256] = "a task";

std::atomic<const LastWords*> g_words{nullptr};
std::atomic<int> g_dying{0};

const LastWords* claim_words() noexcept {
  g_dying.fetch_add(1, std::memory_order_seq_cst);
  return g_words.load(std::memory_order_seq_cst);
}

// A fixed buffer that text is appended to; what does not fit is cut.
struct Text {
  char buf[1024];
  std::size_t len = 0;
  Text& add(const char* s) noexcept {
    while (*s != '\0' && len + 1 < sizeof buf) buf[len++] = *s++;
    buf[len] = '\0';
    return *this;
  }
};

void write_all(int fd, const char* text, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(fd, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}
void write_str(int fd, const std::string& s) noexcept { write_all(fd, s.data(), s.size()); }

void write_number(int fd, std::size_t v) noexcept {
  char digits[24];
  std::size_t n = 0;
  do {
    digits[sizeof digits - 1 - n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  write_all(fd, digits + sizeof digits - n, n);
}

// `s` as the inside of a JSON string.
void write_json_escaped(int fd, const char* s) noexcept {
  static const char hex[] = "0123456789abcdef";
  for (; *s != '\0'; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      const char esc[2] = {'\\', static_cast<char>(c)};
      write_all(fd, esc, 2);
    } else if (c < 0x20) {
      const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      write_all(fd, esc, 6);
    } else {
      write_all(fd, s, 1);
    }
  }
}

// Opens words.tmp for writing; -1 when there is nothing to write or it cannot be created.
int open_tmp(const LastWords* w) noexcept {
  if (w == nullptr || w->path.empty()) return -1;
  return ::open(w->tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}
void close_and_rename(const LastWords* w, int fd) noexcept {
  ::close(fd);
  if (::rename(w->tmp.c_str(), w->path.c_str()) != 0) ::unlink(w->tmp.c_str());
}
std::size_t rows_of(const LastWords* w) noexcept { return w->rows != nullptr ? w->rows->load() : 0; }

void on_fatal_signal(int sig, siginfo_t* info, void*) {
  report_crash_and_die(sig, info->si_code <= 0 && info->si_pid != ::getpid());
}

// An exception that escapes a thread's function ends the process through std::terminate. Ours
// never do (each worker catches what its setup throws); a library's may: oneTBB's worker threads
// start more workers, and when pthread_create fails there (ulimit -u, ulimit -v) its
// std::runtime_error "pthread_create has failed: ..." escapes a TBB thread. Out of memory or
// threads is the machine's limit, not a bug: it is reported like the other resource failures,
// one line and exit status 1. Anything else is a bug and ends as the crash it is, core and all.
std::terminate_handler g_previous_terminate = nullptr;

[[noreturn]] void on_terminate() {
  const char* what = nullptr;
  try {
    if (std::exception_ptr e = std::current_exception()) std::rethrow_exception(e);
  } catch (const std::bad_alloc& e) {
    what = e.what();
  } catch (const std::exception& e) {
    if (std::strstr(e.what(), "pthread_create") != nullptr) what = e.what();
  } catch (...) {
  }
  if (what == nullptr) {
    // libstdc++'s handler prints the exception's type and what(); its abort() reaches the SIGABRT
    // handler, which names the case and marks the sidecar failed.
    if (g_previous_terminate != nullptr) g_previous_terminate();
    std::abort();
  }
  // Several of the library's threads may fail at once: the first reports, the rest wait for the
  // _exit.
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) {
    for (;;) ::pause();
  }
  Text error;
  error.add("a thread of the scheduler ran out of threads or memory while running ")
      .add(g_context)
      .add(" (")
      .add(what)
      .add("); use fewer --threads or raise the limit (ulimit -u, ulimit -v); the rows written before it are kept");
  report_failure(error.buf);
  ::_exit(1);
}

// A library may end the process with exit() in the middle of a run: libgomp does when it cannot
// create a thread ("libgomp: Thread creation failed: ..."). atexit handlers still run, and the
// sidecar must not be left saying "running". Prepared last words mean a run is in progress: the
// harness clears them before any ordinary exit (Sidecar::finish and its destructor).
void on_exit_during_run() {
  const LastWords* w = g_words.load(std::memory_order_seq_cst);
  if (w == nullptr || w->path.empty()) return;
  Text error;
  error.add("a library ended the process with exit() while running ")
      .add(g_context)
      .add(" (its message is above; for \"Thread creation failed\", use fewer --threads or raise the limit: "
           "ulimit -u, ulimit -v); the rows written before it are kept");
  report_failure(error.buf);
}

}  // namespace

void set_last_words(LastWords words) {
  const LastWords* old = g_words.exchange(new LastWords(std::move(words)), std::memory_order_seq_cst);
  if (g_dying.load(std::memory_order_seq_cst) == 0) delete old;
}

void set_overflow_context(const char* label) noexcept {
  std::strncpy(g_context, label, sizeof g_context - 1);
  g_context[sizeof g_context - 1] = '\0';
}

const char* overflow_context() noexcept { return g_context; }

void install_crash_handlers() {
  install_overflow_handler();  // SIGSEGV: a stack overflow is reported as one, anything else a crash
  // serial and the elision run tasks on the harness thread's own stack.
  (void)guard_task_thread(ThreadStackFix::stack_limit);
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;  // a second fault takes the default
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::sigaction(sig, &sa, nullptr);
    std::atexit(on_exit_during_run);
    g_previous_terminate = std::set_terminate(on_terminate);
  });
}

void write_failed_last_words(const char* error) noexcept {
  const LastWords* w = claim_words();
  const int fd = open_tmp(w);
  if (fd < 0) return;
  write_str(fd, w->failed[0]);
  write_all(fd, "\"", 1);
  write_json_escaped(fd, error);
  write_all(fd, "\"", 1);
  write_str(fd, w->failed[1]);
  write_number(fd, rows_of(w));
  write_str(fd, w->failed[2]);
  close_and_rename(w, fd);
}

void write_interrupted_last_words() noexcept {
  const LastWords* w = claim_words();
  const int fd = open_tmp(w);
  if (fd < 0) return;
  write_str(fd, w->interrupted[0]);
  write_number(fd, rows_of(w));
  write_str(fd, w->interrupted[1]);
  close_and_rename(w, fd);
}

void report_failure(const char* error) noexcept {
  Text line;
  line.add("schedlab: error: ").add(error).add("\n");
  write_all(STDERR_FILENO, line.buf, line.len);
  write_failed_last_words(error);
}

void report_crash_and_die(int sig, bool sent_by_another_process) noexcept {
  const char* abbrev = ::sigabbrev_np(sig);
  Text name;
  name.add("SIG").add(abbrev != nullptr ? abbrev : "?");
  Text error;
  if (sent_by_another_process) {
    error.add("the process was killed by ").add(name.buf).add(" from another process while running ");
  } else {
    error.add("the process crashed (").add(name.buf).add(") while running ");
  }
  error.add(g_context).add("; the rows written before it are kept");
  report_failure(error.buf);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // delivered when the handler returns (or at once, where sig is not blocked)
}

}  // namespace schedlab
