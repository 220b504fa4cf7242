// The completion memory: typing through a remembered completion, and everything that must miss.
#include "cache/completion_memory.h"

#include <gtest/gtest.h>

namespace ghostline::cache {
namespace {

TEST(CompletionMemory, TypingTheStartOfACompletionRecallsTheRest) {
  CompletionMemory m;
  m.remember("a.py", "def f(x):\n    \nprint(1)\n", 14, "return x + 1");
  auto r = m.recall("a.py", "def f(x):\n    ret\nprint(1)\n", 17);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rest, "urn x + 1");
  EXPECT_EQ(r->typed, 3u);
  // The same state again (nothing typed) gives the whole completion.
  auto same = m.recall("a.py", "def f(x):\n    \nprint(1)\n", 14);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->rest, "return x + 1");
  EXPECT_EQ(m.stats().hits, 2u);
}

TEST(CompletionMemory, MissesWhenTheStateDoesNotContinueTheCompletion) {
  CompletionMemory m;
  m.remember("a.py", "ab|cd", 3, "xyz");
  EXPECT_FALSE(m.recall("a.py", "ab|xq|cd", 5));      // typed differs from the completion
  EXPECT_FALSE(m.recall("a.py", "ab|xyz|cd", 6));     // all of it typed: nothing left
  EXPECT_FALSE(m.recall("a.py", "ab|xcd!", 4));       // the text after the cursor changed
  EXPECT_FALSE(m.recall("a.py", "Ab|xcd", 4));        // the text before changed
  EXPECT_FALSE(m.recall("a.py", "ab|cd", 2));         // the cursor moved back
  EXPECT_FALSE(m.recall("b.py", "ab|xcd", 4));        // another document
  EXPECT_TRUE(m.recall("a.py", "ab|xcd", 4));
  m.forget("a.py");
  EXPECT_FALSE(m.recall("a.py", "ab|xcd", 4));
}

TEST(CompletionMemory, NewestEntryWinsAndOldOnesAreDropped) {
  CompletionMemory m(/*per_document=*/2, /*documents=*/2);
  m.remember("a", "x", 1, "111");
  m.remember("a", "x", 1, "222");  // the same state: replaces
  EXPECT_EQ(m.recall("a", "x", 1)->rest, "222");
  m.remember("a", "y", 1, "333");
  m.remember("a", "z", 1, "444");  // a third state of "a": the oldest ("x") goes
  EXPECT_FALSE(m.recall("a", "x", 1));
  EXPECT_TRUE(m.recall("a", "y", 1));
  m.remember("b", "x", 1, "555");
  m.remember("c", "x", 1, "666");  // a third document: the least recently used ("a"... or "b") goes
  EXPECT_TRUE(m.recall("c", "x", 1));
  EXPECT_EQ(int(m.recall("a", "y", 1).has_value()) + int(m.recall("b", "x", 1).has_value()), 1);
  m.remember("c", "q", 0, "");  // empty completions are not kept
  EXPECT_FALSE(m.recall("c", "q", 0));
}

}  // namespace
}  // namespace ghostline::cache
