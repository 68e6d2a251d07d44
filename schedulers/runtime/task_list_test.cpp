// TaskList: the intrusive list behind every mutex-protected queue. Order and size after each
// kind of push, and what pop leaves behind.
#include "task_list.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace schedlab {
namespace {

// Pops until empty; the list must then say so.
std::vector<Task*> drain(TaskList& l) {
  std::vector<Task*> out;
  while (Task* t = l.pop_front()) out.push_back(t);
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.size(), 0u);
  return out;
}

TEST(TaskList, StartsEmpty) {
  TaskList l;
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.size(), 0u);
  EXPECT_EQ(l.pop_front(), nullptr);
  EXPECT_EQ(l.size(), 0u);
}

TEST(TaskList, PushBackIsFifo) {
  std::vector<Task> t(3);
  TaskList l;
  for (Task& x : t) l.push_back(x);
  EXPECT_EQ(l.size(), 3u);
  EXPECT_EQ(l.pop_front(), &t[0]);
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(drain(l), (std::vector<Task*>{&t[1], &t[2]}));
}

TEST(TaskList, PushFrontIsLifo) {
  std::vector<Task> t(3);
  TaskList l;
  for (Task& x : t) l.push_front(x);
  EXPECT_EQ(l.size(), 3u);
  EXPECT_EQ(drain(l), (std::vector<Task*>{&t[2], &t[1], &t[0]}));
}

TEST(TaskList, PushFrontOnEmptyThenPushBackKeepsBothEnds) {
  std::vector<Task> t(3);
  TaskList l;
  l.push_front(t[1]);  // head and tail
  l.push_back(t[2]);
  l.push_front(t[0]);
  EXPECT_EQ(l.size(), 3u);
  EXPECT_EQ(drain(l), (std::vector<Task*>{&t[0], &t[1], &t[2]}));
}

TEST(TaskList, ChainIsAppendedInOrderAndCounted) {
  std::vector<Task> t(5);
  TaskList l;
  l.push_back(t[0]);
  // t[1] -> t[2] -> t[3], linked by the caller as the overflow path links them; t[3]'s stale
  // link must not survive.
  t[1].next = &t[2];
  t[2].next = &t[3];
  t[3].next = &t[0];
  l.push_back_chain(t[1], t[3], 3);
  EXPECT_EQ(l.size(), 4u);
  l.push_back(t[4]);  // after the chain's last link
  EXPECT_EQ(l.size(), 5u);
  EXPECT_EQ(drain(l), (std::vector<Task*>{&t[0], &t[1], &t[2], &t[3], &t[4]}));
}

TEST(TaskList, ChainIntoEmptyListBecomesTheWholeList) {
  std::vector<Task> t(2);
  TaskList l;
  t[0].next = &t[1];
  l.push_back_chain(t[0], t[1], 2);
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(drain(l), (std::vector<Task*>{&t[0], &t[1]}));
}

TEST(TaskList, PopUnlinksTheTaskAndEmptyingResetsBothEnds) {
  std::vector<Task> t(2);
  TaskList l;
  l.push_back(t[0]);
  l.push_back(t[1]);
  EXPECT_EQ(l.pop_front()->next, nullptr) << "a popped task carries no link into the list";
  EXPECT_EQ(drain(l), std::vector<Task*>{&t[1]});
  l.push_back(t[0]);  // into a list emptied by pops: head and tail both start again
  EXPECT_EQ(l.size(), 1u);
  EXPECT_EQ(drain(l), std::vector<Task*>{&t[0]});
}

}  // namespace
}  // namespace schedlab
