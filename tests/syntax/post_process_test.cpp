#include "syntax/post_process.h"

#include <random>

#include <gtest/gtest.h>

namespace ghostline::syntax {
namespace {

TEST(CompletionShape, LineWithTextIsSingleLine) {
  std::string text = "def f(x):\n    return x +\n";
  auto shape = shape_at(text, text.find(" +") + 2);
  EXPECT_TRUE(shape.single_line);
  EXPECT_EQ(shape.rest_of_line, "");
  text = "print()\n";
  shape = shape_at(text, 6);
  EXPECT_TRUE(shape.single_line);
  EXPECT_EQ(shape.rest_of_line, ")");
}

TEST(CompletionShape, BlankLineAsksForABlock) {
  std::string text = "def f(x):\n    \n";
  auto shape = shape_at(text, 14);
  EXPECT_FALSE(shape.single_line);
  EXPECT_TRUE(shape_at("", 0).single_line == false);
}

TEST(FinishCompletion, SingleLineStopsAtTheLineBreak) {
  CompletionShape shape;
  EXPECT_TRUE(should_stop(shape, "x + 1\n    y"));
  EXPECT_FALSE(should_stop(shape, "x + 1"));
  EXPECT_EQ(finish_completion(shape, "x + 1  \n    y"), "x + 1");
}

TEST(FinishCompletion, BlockStopsAtABlankLineOrMaxLines) {
  CompletionShape shape;
  shape.single_line = false;
  shape.max_lines = 3;
  EXPECT_EQ(finish_completion(shape, "a = 1\nb = 2\n\nc = 3"), "a = 1\nb = 2");
  EXPECT_FALSE(should_stop(shape, "a = 1\nb = 2\n"));
  EXPECT_TRUE(should_stop(shape, "a\nb\nc\nd"));
  EXPECT_EQ(finish_completion(shape, "a\nb\nc\nd"), "a\nb\nc");
}

TEST(FinishCompletion, DropsWhatRepeatsTheRestOfTheLine) {
  CompletionShape shape;
  shape.rest_of_line = ")";
  EXPECT_EQ(finish_completion(shape, "x, y)"), "x, y");
  shape.rest_of_line = "  ]  ";
  EXPECT_EQ(finish_completion(shape, "1, 2]"), "1, 2");
  EXPECT_EQ(finish_completion(shape, "1, 2"), "1, 2");
}

TEST(FinishCompletion, DropsAnIncompleteUtf8Tail) {
  CompletionShape shape;
  EXPECT_EQ(finish_completion(shape, "caf\xC3"), "caf");
  EXPECT_EQ(finish_completion(shape, "caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(finish_completion(shape, "x\xF0\x9F\x98"), "x");
}

TEST(FinishCompletion, CutShortEndsAtACleanBoundary) {
  auto line = shape_at("x = ", 4);
  EXPECT_EQ(finish_completion(line, "compute(alpha, bet", true), "compute(alpha,");
  EXPECT_EQ(finish_completion(line, "compute(alpha, bet", false), "compute(alpha, bet");
  EXPECT_EQ(finish_completion(line, "compute", true), "compute");  // a lone word is kept
  EXPECT_EQ(finish_completion(line, "f(x)\ny = 2", true), "f(x)");  // it reached its stop
  auto block = shape_at("def f():\n    \n", 13);
  ASSERT_FALSE(block.single_line);
  EXPECT_EQ(finish_completion(block, "a = 1\n    b = com", true), "a = 1");
  EXPECT_EQ(finish_completion(block, "a = 1\n    b = com", false), "a = 1\n    b = com");
  EXPECT_EQ(finish_completion(block, "a = fo", true), "a =");
}

// StopRules sees the text piece by piece and must stop exactly where should_stop, which looks
// at the whole text each time, first says so.
TEST(StopRules, AgreesWithShouldStopOnEveryPrefix) {
  std::mt19937 rng(7);
  const std::string alphabet[] = {"\n", "\n", " ", "\t", "\r", "x", "ab", "\n  ", "  \n"};
  for (int trial = 0; trial < 2000; ++trial) {
    CompletionShape shape;
    shape.single_line = trial % 5 == 0;
    shape.max_lines = 1 + int(rng() % 6);
    StopRules rules(shape);
    std::string text;
    const int pieces = 1 + int(rng() % 12);
    for (int p = 0; p < pieces; ++p) {
      std::string piece;
      for (int n = int(rng() % 3); n >= 0; --n) piece += alphabet[rng() % std::size(alphabet)];
      text += piece;
      ASSERT_EQ(rules.append(piece), should_stop(shape, text)) << "trial " << trial << " text '" << text << "'";
      if (should_stop(shape, text)) break;
    }
  }
}

}  // namespace
}  // namespace ghostline::syntax
