// trace.hpp: a bounded per-worker timeline of what each worker thread did (--trace).
//
// Each worker appends to its own buffer: slices for running a task, being parked and sitting in
// a blocking call, and instants for steals. A buffer never grows past its share of the cap;
// events beyond it are counted as dropped, so a long run cannot eat the machine's memory and the
// trace says it was cut. Recording is off unless the harness asks for it, and then costs a clock
// read and an uncontended lock per event. The lock is there for the harness: a worker woken late
// (central's condition variable, a stale unpark) can record the end of its park after the root
// has finished, while the harness takes or resets the buffers between runs.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace schedlab {

enum class TraceKind : std::uint8_t { task, park, syscall, steal };

struct TraceEvent {
  std::uint64_t begin_ns;  // steady clock
  std::uint64_t end_ns;    // == begin_ns for an instant
  TraceKind kind;
  std::uint32_t arg;       // steal: tasks taken
};

struct WorkerTrace {
  unsigned worker = 0;
  std::vector<TraceEvent> events;
  std::uint64_t dropped = 0;
};

class TraceBuffer {
 public:
  void reset(std::size_t cap) {
    std::lock_guard lock(mutex_);
    events_.clear();
    events_.reserve(cap);
    cap_ = cap;
    dropped_ = 0;
  }
  void add(TraceKind kind, std::uint64_t begin, std::uint64_t end, std::uint32_t arg = 0) {
    std::lock_guard lock(mutex_);
    if (events_.size() < cap_) {
      events_.push_back({begin, end, kind, arg});
    } else {
      ++dropped_;
    }
  }
  WorkerTrace take(unsigned worker) {
    std::lock_guard lock(mutex_);
    WorkerTrace t{worker, std::move(events_), dropped_};
    events_.clear();
    cap_ = 0;
    return t;
  }

 private:
  std::mutex mutex_;  // the worker's add() against the harness's reset() and take()
  std::vector<TraceEvent> events_;
  std::size_t cap_ = 0;  // 0: not recording
  std::uint64_t dropped_ = 0;
};

}  // namespace schedlab
