// sync_object.hpp: what a channel or a mutex is to its scheduler, whatever implements it.
//
// The task API's Channel<T> and Mutex (api.hpp) hold a ChannelCore or MutexCore that their
// scheduler made (Scheduler::make_channel, make_mutex): Go's algorithms over the scheduler's
// park and ready (go_channel.hpp, go_mutex.hpp) for the fiber schedulers, os-threads and tbb;
// Boost.Fiber's own channels and mutex for boost-fiber. Each is a SyncObject, registered with its
// scheduler's SyncRegistry for as long as it lives, so that the deadlock watch can say which
// task waits on what ("all goroutines are asleep") and then break the waits (abandon) so that
// the run ends with that report instead of hanging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace schedlab {

class Scheduler;
struct Waiter;
enum class WaitKind : std::uint8_t;

class SyncObject {
 public:
  // Registers with s's registry; `kind` ("channel", "mutex") and `name` say what it is in reports.
  SyncObject(Scheduler& s, const char* kind, std::string name);
  // Leaves the registry if the derived destructor has not (leave_registry).
  virtual ~SyncObject();
  SyncObject(const SyncObject&) = delete;
  SyncObject& operator=(const SyncObject&) = delete;

  // `channel "ping 3"`, or `channel #12` for one without a name.
  std::string label() const;
  // Appends one line per parked task ("\n  task 0x...: receive on channel ..."), under the
  // object's lock. Returns how many.
  virtual std::size_t describe_waiters(std::string& out) const = 0;
  // Takes every parked task off the object's queues, marked abandoned (its operation throws
  // DeadlockError once readied), appending it to `out` for the caller to ready, and makes every
  // later operation that would park throw too. Only once every task is asleep for good (the
  // deadlock watch): SyncRegistry::abandon_all.
  virtual void abandon(std::vector<Waiter*>& out) = 0;

 protected:
  // Every derived destructor calls this first, before its members go: while the deadlock watch
  // abandons the objects' waits (SyncRegistry::abandon_all) no object may be destroyed, and
  // this waits for it. Idempotent.
  void leave_registry() noexcept;

  Scheduler& scheduler_;

 private:
  friend class SyncRegistry;
  bool registered_ = true;
  const char* const kind_;
  const std::string name_;
  std::uint64_t serial_ = 0;  // its registry's count at creation, for unnamed objects
  SyncObject* prev_ = nullptr;  // the registry's list, guarded by its mutex
  SyncObject* next_ = nullptr;
};

// Go's hchan, as seen by Channel<T>: values of `elem_size` bytes, copied in and out.
class ChannelCore : public SyncObject {
 public:
  using SyncObject::SyncObject;
  // Hands the value at `value` to a receiver, or buffers it, or parks until one of those is
  // possible. Throws std::logic_error on a closed channel (Go panics), DeadlockError if abandoned.
  virtual void send(const void* value) = 0;
  // Takes a value into `out` and returns true, or returns false once the channel is closed and
  // drained; parks while there is nothing to take.
  virtual bool recv(void* out) = 0;
  // Wakes every parked receiver (they get false) and sender (they throw). Throws
  // std::logic_error if already closed.
  virtual void close() = 0;
};

// Go's sync.Mutex, as seen by Mutex.
class MutexCore : public SyncObject {
 public:
  using SyncObject::SyncObject;
  virtual void lock() = 0;
  virtual bool try_lock() = 0;
  virtual void unlock() = 0;
};

// For describe_waiters: appends "\n  task 0x...: receive from <what>" for a parked task (named
// by its Task where the backend has one, else by its Waiter).
void append_waiter_line(std::string& out, const Waiter& w, const std::string& what);
// What an operation that was parked, or would park, on an abandoned object throws.
[[noreturn]] void throw_abandoned(const SyncObject& o, WaitKind kind);

// The live channels and mutexes of one scheduler.
class SyncRegistry {
 public:
  void add(SyncObject& o);
  void remove(SyncObject& o) noexcept;
  // Every parked task, one line each (SyncObject::describe_waiters); *count: how many.
  std::string describe_waiters(std::size_t* count) const;
  // Abandons every object's waits (SyncObject::abandon), then readies each abandoned task
  // through `s`; returns how many. Holds the registry's lock throughout, so that no object is
  // destroyed meanwhile (a readied task unwinds and destroys what it owns, waiting in
  // leave_registry until this returns).
  std::size_t abandon_all(Scheduler& s);

 private:
  mutable std::mutex mutex_;
  SyncObject* head_ = nullptr;  // guarded by mutex_
  std::uint64_t created_ = 0;   // guarded by mutex_
};

}  // namespace schedlab
