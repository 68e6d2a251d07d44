// assert.hpp: SCHEDLAB_ASSERT, the schedulers' invariants written as code.
//
// Go's runtime states its invariants as checks that stop the program (throw("negative
// nmspinning")), Tokio as debug_assert!s. SCHEDLAB_ASSERT(cond, message) is both: where it is
// on, a false `cond` prints one line on stderr and aborts,
//
//   schedlab: invariant violated: <cond>: <message> (file:line)
//
// and where it is off the whole statement disappears: `cond` is not evaluated, so a check on a
// hot path (a queue push, a fiber switch) costs a Release build nothing. `cond` must therefore
// never have a side effect the program relies on: compute the value first, then assert on it.
//
// When it is on. Debug builds, and the sanitizer builds: the ASan and TSan presets are
// RelWithDebInfo, which defines NDEBUG, but a sanitizer run is exactly where a broken invariant
// should stop at its cause rather than surface later as a race or a use after free. So the key
// is the compiler's own view of the build (NDEBUG, __SANITIZE_ADDRESS__, __SANITIZE_THREAD__),
// not a CMake option: every translation unit of a build agrees without any plumbing, and a file
// compiled outside CMake (a test, a micro benchmark) gets the same answer. -DSCHEDLAB_ASSERTIONS=1
// forces the checks into an optimised build (a soak of the Release stress tests); =0 removes
// them from a Debug one.
//
// Debug-only state that exists just to be checked (Task's run-once mark, Fiber's running mark)
// is declared under `#if SCHEDLAB_ASSERTIONS` too, so Release objects keep their size.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#ifndef SCHEDLAB_ASSERTIONS
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SCHEDLAB_ASSERTIONS 1
#else
#define SCHEDLAB_ASSERTIONS 0
#endif
#endif

namespace schedlab {

// For `if constexpr` and for tests that only make sense in one kind of build.
inline constexpr bool kAssertionsOn = SCHEDLAB_ASSERTIONS != 0;

namespace detail {

// Out of line and cold, so the check at each call site is a compare and a rarely taken branch.
// The line is formatted first and written with one write(2): a worker thread aborting while
// others still print cannot interleave with them, and nothing here allocates.
[[noreturn, gnu::cold, gnu::noinline]] inline void invariant_violated(const char* cond,
                                                                      const char* message,
                                                                      const char* file,
                                                                      int line) noexcept {
  char text[1024];
  const int n = std::snprintf(text, sizeof text, "schedlab: invariant violated: %s: %s (%s:%d)\n",
                              cond, message, file, line);
  if (n > 0) {
    const auto len = static_cast<std::size_t>(n) < sizeof text ? static_cast<std::size_t>(n)
                                                                : sizeof text - 1;
    [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, text, len);
  }
  std::abort();
}

}  // namespace detail
}  // namespace schedlab

#if SCHEDLAB_ASSERTIONS
#define SCHEDLAB_ASSERT(cond, message)                                                    \
  (__builtin_expect(static_cast<bool>(cond), 1)                                           \
       ? static_cast<void>(0)                                                             \
       : ::schedlab::detail::invariant_violated(#cond, message, __FILE__, __LINE__))
#else
// sizeof keeps `cond` an unevaluated operand: no code, but the names in it still count as used,
// so a value computed only to be checked does not warn in Release.
#define SCHEDLAB_ASSERT(cond, message) static_cast<void>(sizeof(static_cast<bool>(cond)))
#endif
