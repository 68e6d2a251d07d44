// task_list.hpp: an intrusive singly linked list of tasks, for the queues that live behind a
// mutex (central's queue, fair's per-processor queues, steal-half's global queue). Linking
// through Task::next means pushing never allocates, as Go's global run queue links g.schedlink.
// Not thread-safe: the owner of the list holds its lock.
#pragma once

#include <cstddef>

#include "../assert.hpp"
#include "../task.hpp"

namespace schedlab {

class TaskList {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  std::size_t size() const noexcept { return size_; }

  void push_back(Task& t) noexcept {
    t.next = nullptr;
    if (tail_ != nullptr) {
      tail_->next = &t;
    } else {
      head_ = &t;
    }
    tail_ = &t;
    ++size_;
  }
  void push_front(Task& t) noexcept {
    t.next = head_;
    head_ = &t;
    if (tail_ == nullptr) tail_ = &t;
    ++size_;
  }
  // Appends a chain first..last (linked through next) of n tasks.
  void push_back_chain(Task& first, Task& last, std::size_t n) noexcept {
    SCHEDLAB_ASSERT(n >= 1 && (n > 1 || &first == &last), "a chain of n tasks has n >= 1 links");
    last.next = nullptr;
    if (tail_ != nullptr) {
      tail_->next = &first;
    } else {
      head_ = &first;
    }
    tail_ = &last;
    size_ += n;
  }
  Task* pop_front() noexcept {
    Task* t = head_;
    SCHEDLAB_ASSERT((t == nullptr) == (size_ == 0), "a list's size counts exactly its links");
    if (t == nullptr) return nullptr;
    head_ = t->next;
    if (head_ == nullptr) tail_ = nullptr;
    t->next = nullptr;
    --size_;
    return t;
  }

 private:
  Task* head_ = nullptr;
  Task* tail_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace schedlab
