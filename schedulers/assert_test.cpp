// SCHEDLAB_ASSERT: one line naming the condition, the message and the place, then abort, in a
// checked build (Debug, ASan, TSan); nothing at all, not even the condition's evaluation, in an
// unchecked one (Release).
#include "assert.hpp"

#include <gtest/gtest.h>

namespace schedlab {
namespace {

TEST(SchedlabAssert, FiresWithItsMessageWhereChecked) {
  if (!kAssertionsOn) GTEST_SKIP() << "SCHEDLAB_ASSERT is compiled out in this build";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int two = 2;
  EXPECT_DEATH(SCHEDLAB_ASSERT(two + two == 5, "arithmetic holds"),
               "schedlab: invariant violated: two \\+ two == 5: arithmetic holds "
               "\\(.*assert_test\\.cpp:[0-9]+\\)");
}

TEST(SchedlabAssert, TrueConditionDoesNothingWhereChecked) {
  if (!kAssertionsOn) GTEST_SKIP() << "SCHEDLAB_ASSERT is compiled out in this build";
  int evaluated = 0;
  SCHEDLAB_ASSERT(++evaluated == 1, "evaluated once");
  EXPECT_EQ(evaluated, 1);
}

TEST(SchedlabAssert, CompiledOutWhereUnchecked) {
  if (kAssertionsOn) GTEST_SKIP() << "SCHEDLAB_ASSERT is checked in this build";
  int evaluated = 0;
  // A false condition with a side effect: neither fires nor runs.
  SCHEDLAB_ASSERT(++evaluated == 5, "never evaluated");
  EXPECT_EQ(evaluated, 0);
}

}  // namespace
}  // namespace schedlab
