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
  EXPECT_TRUE(reaches_stop_point(shape, "x + 1\n    y"));
  EXPECT_FALSE(reaches_stop_point(shape, "x + 1"));
  EXPECT_EQ(finish_completion(shape, "x + 1  \n    y"), "x + 1");
}

TEST(FinishCompletion, BlockStopsAtABlankLineOrMaxLines) {
  CompletionShape shape;
  shape.single_line = false;
  shape.max_lines = 3;
  EXPECT_EQ(finish_completion(shape, "a = 1\nb = 2\n\nc = 3"), "a = 1\nb = 2");
  EXPECT_FALSE(reaches_stop_point(shape, "a = 1\nb = 2\n"));
  EXPECT_TRUE(reaches_stop_point(shape, "a\nb\nc\nd"));
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

TEST(CompletionShape, KnowsTheBlockAroundTheCursor) {
  std::string text = "class A:\n    def f(self):\n        \n\n    def g(self):\n        pass\n";
  auto shape = shape_at(text, text.find("        \n") + 8);
  EXPECT_FALSE(shape.single_line);
  EXPECT_EQ(shape.min_indent, 5);  // deeper than the def that opens the block
  EXPECT_EQ(shape.base_indent, 8);
  EXPECT_EQ(shape.previous_line, "def f(self):");
  EXPECT_EQ(shape.next_line, "def g(self):");

  text = "int main() {\n  return 0;\n}\n";
  shape = shape_at(text, text.find('{') + 1);  // at the end of a line that opens a block
  EXPECT_FALSE(shape.single_line);
  EXPECT_EQ(shape.min_indent, 1);
  EXPECT_EQ(shape.next_line, "return 0;");
  // A closing brace also closes the blocks the completion opens: it is no stop line.
  text = "func f() {\n}\n";
  shape = shape_at(text, text.find('{') + 1);
  EXPECT_EQ(shape.next_line, "");
  EXPECT_EQ(finish_completion(shape, "\n\tif x {\n\t\treturn\n\t}\n\treturn\n}\n"),
            "\n\tif x {\n\t\treturn\n\t}\n\treturn");
}

TEST(FinishCompletion, ABlockEndsWhereItsIndentationEnds) {
  const std::string text = "def f(x):\n    \n";
  auto shape = shape_at(text, 14);
  ASSERT_EQ(shape.min_indent, 1);
  // Blank lines inside the body are kept; the dedent that leaves the function ends it.
  EXPECT_EQ(finish_completion(shape, "y = x + 1\n\n    return y\n\nprint(f(2))\n"),
            "y = x + 1\n\n    return y");
  // Brace languages: the line of the closing brace is not part of the body.
  const std::string c = "int f(int x) {\n  \n}\n";
  auto cs = shape_at(c, c.find("  \n") + 2);
  ASSERT_EQ(cs.min_indent, 1);
  EXPECT_EQ(finish_completion(cs, "int y = x * 2;\n  return y;\n}\n\nint g() {"),
            "int y = x * 2;\n  return y;");
}

TEST(FinishCompletion, ASiblingDefinitionEndsIt) {
  auto shape = shape_at("import os\n\n", 11);  // top level: no enclosing block
  ASSERT_FALSE(shape.single_line);
  EXPECT_EQ(finish_completion(shape, "def a():\n    x = 1\n\n    return x\n\ndef b():\n    pass"),
            "def a():\n    x = 1\n\n    return x");
  EXPECT_EQ(finish_completion(shape, "x = 1\ny = 2\n\nz = 3"), "x = 1\ny = 2");
}

TEST(FinishCompletion, StopsWhereTheCodeAfterTheCursorBegins) {
  const std::string text = "def f(x):\n    \n    return y\n";
  auto shape = shape_at(text, 14);
  EXPECT_EQ(shape.next_line, "return y");
  EXPECT_EQ(finish_completion(shape, "y = x * 2\n    return y\n"), "y = x * 2");
}

TEST(FinishCompletion, ReplacesTheClosingBracketsItTypesOver) {
  auto shape = shape_at("x = f()\n", 6);
  ASSERT_EQ(shape.rest_of_line, ")");
  auto done = finish(shape, "a, b) + 1");
  EXPECT_EQ(done.text, "a, b) + 1");
  EXPECT_EQ(done.replace_after, 1u);
  done = finish(shape, "g(a)");  // closes its own bracket only
  EXPECT_EQ(done.replace_after, 0u);
  done = finish(shape, "a)");  // the same as what is there: dropped, not replaced
  EXPECT_EQ(done.text, "a");
  EXPECT_EQ(done.replace_after, 0u);
}

TEST(FinishCompletion, DropsARepeatOfThePreviousLine) {
  const std::string text = "    total += x\n    total\n";
  auto shape = shape_at(text, text.rfind("total") + 5);
  EXPECT_EQ(finish_completion(shape, " += x"), "");
  EXPECT_EQ(finish_completion(shape, " += y"), " += y");
  EXPECT_EQ(finish_completion(shape, "   \n"), "");
}

TEST(FinishCompletion, IndentsTheBlockAsTheDocumentDoes) {
  const std::string tabs = "func f() {\n\tx := 1\n\t\n}\n";
  auto shape = shape_at(tabs, tabs.find("\t\n") + 1);
  EXPECT_EQ(shape.indent_tabs, 1);
  EXPECT_EQ(finish_completion(shape, "if x > 0 {\n        x--\n\t}"), "if x > 0 {\n\t\tx--\n\t}");
  const std::string spaces = "def f():\n    x = 1\n    \n";
  shape = shape_at(spaces, spaces.find("    \n") + 4);
  EXPECT_EQ(shape.indent_tabs, 0);
  EXPECT_EQ(finish_completion(shape, "if x:\n\t\tx -= 1"), "if x:\n        x -= 1");
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
      ASSERT_EQ(rules.append(piece), reaches_stop_point(shape, text))
          << "trial " << trial << " text '" << text << "'";
      if (reaches_stop_point(shape, text)) break;
    }
  }
}

}  // namespace
}  // namespace ghostline::syntax
