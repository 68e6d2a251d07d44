#include "sync_object.hpp"

#include <cstdio>
#include <vector>

#include "../scheduler.hpp"

namespace schedlab {

void append_waiter_line(std::string& out, const Waiter& w, const std::string& what) {
  const char* verb = w.kind == WaitKind::send ? "send on" : w.kind == WaitKind::recv ? "receive from" : "lock of";
  char task[32];
  std::snprintf(task, sizeof task, "%p",
                w.task != nullptr ? static_cast<const void*>(w.task) : static_cast<const void*>(&w));
  out.append("\n  task ").append(task).append(": ").append(verb).append(" ").append(what);
}

void throw_abandoned(const SyncObject& o, WaitKind kind) {
  const char* what = kind == WaitKind::send ? "a send" : kind == WaitKind::recv ? "a receive" : "a lock";
  throw DeadlockError(std::string(what) + " on " + o.label() +
                      " was abandoned: every task was asleep and none could ever ready it (deadlock)");
}

SyncObject::SyncObject(Scheduler& s, const char* kind, std::string name)
    : scheduler_(s), kind_(kind), name_(std::move(name)) {
  s.sync_registry().add(*this);
}

SyncObject::~SyncObject() { leave_registry(); }

void SyncObject::leave_registry() noexcept {
  if (!registered_) return;
  scheduler_.sync_registry().remove(*this);
  registered_ = false;
}

std::string SyncObject::label() const {
  if (!name_.empty()) return std::string(kind_) + " \"" + name_ + "\"";
  return std::string(kind_) + " #" + std::to_string(serial_);
}

void SyncRegistry::add(SyncObject& o) {
  std::lock_guard lock(mutex_);
  o.serial_ = ++created_;
  o.next_ = head_;
  if (head_ != nullptr) head_->prev_ = &o;
  head_ = &o;
}

void SyncRegistry::remove(SyncObject& o) noexcept {
  std::lock_guard lock(mutex_);
  (o.prev_ != nullptr ? o.prev_->next_ : head_) = o.next_;
  if (o.next_ != nullptr) o.next_->prev_ = o.prev_;
  o.prev_ = o.next_ = nullptr;
}

std::string SyncRegistry::describe_waiters(std::size_t* count) const {
  std::lock_guard lock(mutex_);
  std::string out;
  std::size_t n = 0;
  for (const SyncObject* o = head_; o != nullptr; o = o->next_) n += o->describe_waiters(out);
  *count = n;
  return out;
}

std::size_t SyncRegistry::abandon_all(Scheduler& s) {
  std::vector<Waiter*> abandoned;
  std::lock_guard lock(mutex_);
  for (SyncObject* o = head_; o != nullptr; o = o->next_) o->abandon(abandoned);
  for (Waiter* w : abandoned) s.ready(*w);
  return abandoned.size();
}

}  // namespace schedlab
