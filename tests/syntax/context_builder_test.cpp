// The ContextBuilder's decisions on real-looking code in every language with a grammar: whether
// to complete, one line or a block, and where a generated block stops (golden cases). The
// marker █ is the cursor.
#include "syntax/context_builder.h"

#include <gtest/gtest.h>

#include "syntax/document_tree.h"
#include "syntax/language.h"

namespace ghostline::syntax {
namespace {

constexpr std::string_view kCursor = "█";

struct Case {
  const char* language_id;
  const char* code;       // with the cursor marker
  Decision decision;
  const char* generated = nullptr;  // model output to post-process, if any
  const char* shown = nullptr;      // what is shown of it
  bool fim = true;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.language_id << ": " << c.code; }

CompletionContext context_of(const Case& c, std::string* text_out = nullptr, bool use_tree = true) {
  std::string text = c.code;
  const size_t cursor = text.find(kCursor);
  EXPECT_NE(cursor, std::string::npos) << c.code;
  text.erase(cursor, kCursor.size());
  const Language* language = find_language(c.language_id);
  EXPECT_NE(language, nullptr) << c.language_id;
  std::shared_ptr<const TreeSnapshot> tree;
  std::unique_ptr<DocumentTree> doc;
  if (language && use_tree) {
    doc = std::make_unique<DocumentTree>(*language, text);
    tree = doc->snapshot(1);
  }
  ContextOptions options;
  options.fim = c.fim;
  if (text_out) *text_out = text;
  return build_context(tree.get(), text, cursor, options);
}

const Case kCases[] = {
    // Python
    {"python", "def area(r):\n    return 3.14 * ra█dius\n", Decision::None},
    {"python", "def area(r):\n    # compute the area of█\n    return 0\n", Decision::None},
    {"python", "name = \"hello wor█\"\n", Decision::None},
    {"python", "def area(r):\n    \"\"\"Area of a circle of█\"\"\"\n", Decision::SingleLine,
     "radius r.\"\"\"", "radius r."},
    {"python", "import math\n\ndef area(r):█\n", Decision::MultiLine,
     "\n    return math.pi * r * r\n\ndef perimeter(r):\n    return 2 * math.pi * r\n",
     "\n    return math.pi * r * r"},
    {"python",
     "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, "
     "item):\n        █\n\n    def pop(self):\n        return self.items.pop()\n",
     Decision::MultiLine,
     "self.items.append(item)\n        return self\n\n    def peek(self):\n        return "
     "self.items[-1]\n",
     "self.items.append(item)\n        return self"},
    {"python", "for i in range(10):\n    total = total + █\n", Decision::SingleLine,
     "i * i\nprint(total)\n", "i * i"},
    {"python", "print(f\"total: {█}\")\n", Decision::SingleLine, "total}\")", "total"},
    {"python", "print(f\"total: █\")\n", Decision::None},
    // JavaScript
    {"javascript",
     "function sum(xs) {\n  return xs.reduce((a, b) => a + b, 0);\n}\nconst n = su█m([1]);\n",
     Decision::None},
    {"javascript", "// fetch the user█\nasync function load() {}\n", Decision::None},
    {"javascript", "const url = \"https://example.com/█\";\n", Decision::None},
    {"javascript", "const url = `https://example.com/${█}`;\n", Decision::SingleLine, "user.id}`;",
     "user.id"},
    {"javascript", "function clamp(x, lo, hi) {\n  █\n}\n", Decision::MultiLine,
     "if (x < lo) return lo;\n  if (x > hi) return hi;\n  return x;\n}\n\nfunction other() {",
     "if (x < lo) return lo;\n  if (x > hi) return hi;\n  return x;"},
    {"javascript", "const items = list.map((item) => █);\n", Decision::SingleLine, "item.id);",
     "item.id"},
    // TypeScript
    {"typescript", "interface User {\n  id: number;\n  █\n}\n", Decision::MultiLine,
     "name: string;\n  email: string;\n}\n", "name: string;\n  email: string;"},
    {"typescript",
     "/** Returns the user's display na█ */\nfunction display(u: User): string { return u.name; "
     "}\n",
     Decision::SingleLine},
    {"typescript", "export function isAdmin(u: User): boolean {\n  return u.role === █\n}\n",
     Decision::SingleLine, "\"admin\";\n}", "\"admin\";"},
    // TSX
    {"typescriptreact",
     "export function Button(props: Props) {\n  return <button "
     "onClick={props.onClick}>{props.la█bel}</button>;\n}\n",
     Decision::None},
    {"typescriptreact", "export function List({ items }: Props) {\n  █\n}\n", Decision::MultiLine,
     "const rows = items.map((i) => <li key={i.id}>{i.name}</li>);\n  return <ul>{rows}</ul>;\n}\n",
     "const rows = items.map((i) => <li key={i.id}>{i.name}</li>);\n  return <ul>{rows}</ul>;"},
    // C
    {"c", "#include <stdio.h>\n\nint max(int a, int b) {\n  █\n}\n", Decision::MultiLine,
     "return a > b ? a : b;\n}\n\nint min(int a, int b) {", "return a > b ? a : b;"},
    {"c", "/* parse the header█ */\nint parse(void);\n", Decision::None},
    {"c", "int main(void) {\n  printf(\"%d\\n\", coun█t);\n}\n", Decision::None},
    {"c", "int main(void) {\n  int total = █\n}\n", Decision::SingleLine, "0;\n  return total;",
     "0;"},
    // C++
    {"cpp", "#include <vector>\n\nclass Stack {\n public:\n  void push(int x) {█\n};\n",
     Decision::MultiLine, "\n    items_.push_back(x);\n  }\n\n  int pop() {",
     "\n    items_.push_back(x);"},
    {"cpp", "std::string name = \"ghost█\";\n", Decision::None},
    {"cpp", "int f(std::vector<int>& v) {\n  return std::accumulate(v.begin(), █);\n}\n",
     Decision::SingleLine, "v.end(), 0);", "v.end(), 0"},
    // Go
    {"go", "package main\n\nfunc add(a, b int) int {\n\t█\n}\n", Decision::MultiLine,
     "return a + b\n}\n\nfunc sub(a, b int) int {", "return a + b"},
    {"go", "package main\n\n// add returns the su█m\nfunc add(a, b int) int { return a + b }\n",
     Decision::None},
    {"go", "package main\n\nfunc main() {\n\tfmt.Println(█)\n}\n", Decision::SingleLine,
     "\"hello\")", "\"hello\""},
    // Rust
    {"rust", "fn square(x: i32) -> i32 {\n    █\n}\n", Decision::MultiLine,
     "x * x\n}\n\nfn cube(x: i32) -> i32 {", "x * x"},
    {"rust", "/// Squares the num█ber.\nfn square(x: i32) -> i32 { x * x }\n", Decision::None},
    {"rust", "fn main() {\n    let msg = \"hi█\";\n}\n", Decision::None},
    {"rust", "fn main() {\n    let v: Vec<i32> = (0..10).█\n}\n", Decision::SingleLine,
     "collect();\n}", "collect();"},
    // Java
    {"java", "public class Point {\n  private int x;\n\n  public int getX() {\n    █\n  }\n}\n",
     Decision::MultiLine, "return x;\n  }\n\n  public int getY() {", "return x;"},
    {"java", "public class A {\n  // the counter of█\n  int n;\n}\n", Decision::None},
    {"java", "public class A {\n  String s = \"abc█\";\n}\n", Decision::None},
    // Lua
    {"lua", "local function greet(name)\n  █\nend\n", Decision::MultiLine,
     "print(\"hello \" .. name)\nend\n\nlocal function bye()", "print(\"hello \" .. name)"},
    {"lua", "-- load the config█\nlocal config = {}\n", Decision::None},
    {"lua", "local s = \"abc█\"\n", Decision::None},
    // A prefix-only model does not complete before code it cannot see.
    {"python", "x = █ + compute(1)\n", Decision::None, nullptr, nullptr, /*fim=*/false},
    {"python", "x = █ + compute(1)\n", Decision::SingleLine, nullptr, nullptr, /*fim=*/true},
};

class ContextBuilderGolden : public ::testing::TestWithParam<Case> {};

TEST_P(ContextBuilderGolden, DecidesAndStops) {
  const Case& c = GetParam();
  CompletionContext ctx = context_of(c);
  EXPECT_EQ(decision_name(ctx.decision), std::string(decision_name(c.decision)))
      << c.language_id << ": " << c.code << "\nreason: " << ctx.reason << ", node "
      << ctx.cursor_node;
  if (c.generated && ctx.decision != Decision::None) {
    EXPECT_EQ(finish(ctx.shape, c.generated).text, c.shown) << c.language_id << ": " << c.code;
  }
}

INSTANTIATE_TEST_SUITE_P(Languages, ContextBuilderGolden, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.language_id;
                           return name + "_" + std::to_string(info.index);
                         });

TEST(ContextBuilder, EveryLanguageHasACase) {
  for (const Language* language : all_languages()) {
    bool found = false;
    for (const Case& c : kCases) found |= find_language(c.language_id) == language;
    EXPECT_TRUE(found) << language->name;
  }
}

TEST(ContextBuilder, WithoutAGrammarTheTextDecides) {
  CompletionContext ctx = build_context(nullptr, "let x = \n", 8, ContextOptions{.fim = true});
  EXPECT_EQ(ctx.decision, Decision::SingleLine);
  EXPECT_TRUE(ctx.language.empty());
  ctx = build_context(nullptr, "foo bar\n", 5, ContextOptions{.fim = true});
  EXPECT_EQ(ctx.decision, Decision::None);  // in the middle of a word
}

CompletionContext context_in_mode(const char* code_with_cursor, LineMode mode) {
  std::string text = code_with_cursor;
  const size_t cursor = text.find(kCursor);
  text.erase(cursor, kCursor.size());
  DocumentTree doc(*find_language("python"), text);
  auto tree = doc.snapshot(1);
  return build_context(tree.get(), text, cursor, ContextOptions{.fim = true, .line_mode = mode});
}

TEST(ContextBuilder, LineModeNeverMakesABlock) {
  const char* body = "import math\n\ndef area(r):█\n";
  EXPECT_EQ(context_in_mode(body, LineMode::Auto).decision, Decision::MultiLine);
  const CompletionContext ctx = context_in_mode(body, LineMode::Line);
  EXPECT_EQ(ctx.decision, Decision::SingleLine);
  EXPECT_TRUE(ctx.shape.single_line);
  // What a model generates is cut at the end of the first line.
  EXPECT_EQ(finish(ctx.shape, "\n    return math.pi * r * r\n").text, "");
  EXPECT_EQ(finish(ctx.shape, "  # the area\n    return math.pi * r * r\n").text, "  # the area");
  // Nor does an explicit request: a block asked for in line mode is one line.
  EXPECT_EQ(context_in_mode("def f():\n    █\n", LineMode::Line).decision, Decision::SingleLine);
}

TEST(ContextBuilder, BlockModeContinuesALineOfCodeUntilItsBlockEnds) {
  const char* line =
      "def total(items):\n    s = 0\n    for i in items:\n        s = s + █\n    return s\n";
  EXPECT_EQ(context_in_mode(line, LineMode::Auto).decision, Decision::SingleLine);
  const CompletionContext ctx = context_in_mode(line, LineMode::Block);
  EXPECT_EQ(ctx.decision, Decision::MultiLine);
  EXPECT_EQ(finish(ctx.shape, "i\n        print(s)\n    return s\n").text, "i\n        print(s)");
}

TEST(ContextBuilder, BlockModeKeepsOneLineWhereTheContextAllowsNoMore) {
  // Code after the cursor, a comment, a string: still one line (or nothing), as in auto.
  EXPECT_EQ(context_in_mode("x = █ + compute(1)\n", LineMode::Block).decision,
            Decision::SingleLine);
  EXPECT_EQ(context_in_mode("def area(r):\n    \"\"\"Area of a circle of█\"\"\"\n", LineMode::Block)
                .decision,
            Decision::SingleLine);
  EXPECT_EQ(context_in_mode("name = \"hello wor█\"\n", LineMode::Block).decision, Decision::None);
}

TEST(ContextBuilder, ReferencedNamesAreThoseUsedInTheRange) {
  const std::string text =
      "import os\n\ndef main():\n    cfg = load_config(os.environ)\n    server = Server(cfg)\n    "
      "server.run()\n";
  DocumentTree doc(*find_language("python"), text);
  auto tree = doc.snapshot(1);
  const auto names = referenced_names(*tree, text, text.find("def main"), text.size());
  EXPECT_NE(std::find(names.begin(), names.end(), "load_config"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "Server"), names.end());
  EXPECT_EQ(std::count(names.begin(), names.end(), "load_config"), 1);
}

}  // namespace
}  // namespace ghostline::syntax
