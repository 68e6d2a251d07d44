// diagnostics.hpp: what the harness tells the schedulers so that a crash explains itself.
//
// A fiber stack overflow ends the process from a signal handler (runtime/fiber_guard.hpp), which
// has no way to ask anyone what was running. So the harness hands it, between runs, the two
// things the report needs: what to call the task (the case being run) and a file to leave
// behind (the run's sidecar, marked failed). The handler, alternate signal stacks and guard
// pages stay inside the fiber runtime; this is all of it a caller needs to see.
#pragma once

#include <string>

namespace schedlab {

// What the overflow message calls the task: the harness sets it to the case it is running.
void set_overflow_context(const char* label) noexcept;
// What the handler leaves on disk before it exits: `text` written to `path` (through path.tmp
// and a rename, as the harness writes its sidecar), so that a run's metadata does not claim a
// dead process is still running. Call only while no task runs (between runs): the handler
// reads these without a lock. An empty path writes nothing.
void set_overflow_report(const std::string& path, const std::string& text);

}  // namespace schedlab
