// Incremental trees: after any sequence of edits, the tree that DocumentTree keeps (ts_tree_edit
// + reparse with the old tree) is the tree a fresh parse of the same text gives, node for node,
// with the same byte ranges and (row, byte column) points.
#include "syntax/document_tree.h"

#include "syntax/language.h"
#include "syntax/sample_file.h"

#include <cstdlib>
#include <iostream>
#include <utility>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ghostline::syntax {
namespace {

using testing::language_named;
using testing::read_sample;

struct TreeDeleter {
  void operator()(TSTree* t) const { ts_tree_delete(t); }
};
using Tree = std::unique_ptr<TSTree, TreeDeleter>;

Tree fresh_parse(const Language& lang, const std::string& text) {
  TSParser* parser = ts_parser_new();
  ts_parser_set_language(parser, lang.ts);
  Tree tree(
      ts_parser_parse_string(parser, nullptr, text.data(), static_cast<uint32_t>(text.size())));
  ts_parser_delete(parser);
  return tree;
}

std::string sexp(TSNode node) {
  char* s = ts_node_string(node);
  std::string out(s);
  std::free(s);
  return out;
}

// Every node's type, byte range and points, in document order.
void positions(TSNode node, std::string& out) {
  TSPoint a = ts_node_start_point(node), b = ts_node_end_point(node);
  out += ts_node_type(node);
  out += " " + std::to_string(ts_node_start_byte(node)) + "-" +
         std::to_string(ts_node_end_byte(node)) + " (" + std::to_string(a.row) + "," +
         std::to_string(a.column) + ")-(" + std::to_string(b.row) + "," + std::to_string(b.column) +
         ")\n";
  for (uint32_t i = 0; i < ts_node_child_count(node); ++i) positions(ts_node_child(node, i), out);
}

std::string positions(TSNode node) {
  std::string out;
  positions(node, out);
  return out;
}

struct SampleFile {
  const char* language;
  const char* file;
  const char* line_comment;
};
constexpr SampleFile kSamples[] = {
    {"python", "inventory.py", "#"},      {"javascript", "cart.js", "//"},
    {"typescript", "scheduler.ts", "//"}, {"tsx", "todo_list.tsx", "//"},
    {"c", "ring_buffer.c", "//"},         {"cpp", "matrix.cpp", "//"},
    {"go", "ratelimit.go", "//"},         {"rust", "tokenizer.rs", "//"},
    {"java", "OrderService.java", "//"},  {"lua", "queue.lua", "--"},
};

// Random edits at UTF-8 character boundaries: what an editor sends.
class EditGenerator {
 public:
  explicit EditGenerator(uint32_t seed) : rng_(seed) {}

  struct Edit {
    size_t begin, end;
    std::string text;
  };

  Edit next(const std::string& text) {
    static const std::vector<std::string> kPieces = {
        "é",  "中", "😀", "\r\n", "\n",  "    ", "\t", "(",   ")",     "{",   "}",    "[",
        "]",  ";",  ":",  ",",    "\"",  "'",    "`",  "/*",  "*/",    "//",  "#",    "--",
        "x",  "if", "=",  "end",  "def ", "fn ", "return ", "café = \"naïve 中文 😀\"\r\n"};
    size_t begin = boundary(text, pick(text.size() + 1));
    size_t end = begin;
    int op = static_cast<int>(pick(3));  // 0 insert, 1 delete, 2 replace
    if (op != 0 && begin < text.size()) {
      end = boundary(text, std::min(text.size(), begin + 1 + pick(24)));
    }
    std::string inserted;
    if (op != 1) {
      if (pick(4) == 0 && !text.empty()) {  // a slice of the document itself: real code
        size_t a = boundary(text, pick(text.size()));
        size_t b = boundary(text, std::min(text.size(), a + pick(60)));
        inserted = text.substr(a, b - a);
      } else {
        for (size_t n = 1 + pick(3); n > 0; --n) inserted += kPieces[pick(kPieces.size())];
      }
    }
    return {begin, end, inserted};
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  // Moves back off UTF-8 continuation bytes.
  static size_t boundary(const std::string& text, size_t at) {
    while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
      --at;
    return at;
  }
  std::mt19937 rng_;
};

// Every node's points agree with its bytes: rows at '\n', columns in bytes.
void expect_points_match_bytes(TSNode root, const std::string& text) {
  std::vector<size_t> line_starts = {0};
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') line_starts.push_back(i + 1);
  }
  std::vector<TSNode> stack = {root};
  while (!stack.empty()) {
    TSNode node = stack.back();
    stack.pop_back();
    for (auto [point, byte] : {std::pair{ts_node_start_point(node), ts_node_start_byte(node)},
                               std::pair{ts_node_end_point(node), ts_node_end_byte(node)}}) {
      ASSERT_LT(point.row, line_starts.size()) << ts_node_type(node);
      ASSERT_EQ(line_starts[point.row] + point.column, byte) << ts_node_type(node);
    }
    for (uint32_t i = 0; i < ts_node_child_count(node); ++i)
      stack.push_back(ts_node_child(node, i));
  }
}

class RandomEdits : public ::testing::TestWithParam<SampleFile> {};

// Seeded runs of edits through DocumentTree::edit (see the phases below). Whenever the text
// parses without errors, the incremental tree must be the fresh tree exactly (structure, byte
// ranges, points). While the text has errors, tree-sitter's error recovery may legitimately
// settle on a different recovery when it can reuse old subtrees (its own randomized tests only
// compare trees once edits are undone), so there both trees must agree that there is an error
// and every point must still match its byte offset; the count of such differences is printed.
TEST_P(RandomEdits, IncrementalTreeEqualsAFreshParse) {
  const Language* lang = language_named(GetParam().language);
  ASSERT_NE(lang, nullptr);
  std::string reference = [&] {
    std::string text = read_sample(GetParam().file);
    if (GetParam().language[0] >= 'k') return text;
    // Half of the languages start from CRLF line ends, as files from Windows do.
    std::string crlf;
    for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    return crlf;
  }();
  DocumentTree doc(*lang, reference);
  EditGenerator generator(20240601u +
                          static_cast<uint32_t>(std::string(GetParam().language).size()));
  struct Applied {
    size_t begin;
    std::string removed, inserted;
  };
  std::vector<Applied> history;
  int strict = 0, recovered_differently = 0;

  auto apply_and_check = [&](size_t begin, size_t end, const std::string& text,
                             const std::string& what) {
    reference.replace(begin, end - begin, text);
    doc.edit(begin, end, text);
    ASSERT_EQ(doc.text(), reference);
    Tree fresh = fresh_parse(*lang, reference);
    TSNode mine = ts_tree_root_node(doc.tree());
    TSNode theirs = ts_tree_root_node(fresh.get());
    if (!ts_node_has_error(theirs)) {
      ++strict;
      ASSERT_EQ(sexp(mine), sexp(theirs)) << what;
      ASSERT_EQ(positions(mine), positions(theirs)) << what;
    } else {
      ASSERT_TRUE(ts_node_has_error(mine)) << what;
      if (sexp(mine) != sexp(theirs)) ++recovered_differently;
    }
    expect_points_match_bytes(mine, reference);
    ASSERT_GE(doc.last_parse_ms(), 0.0);
  };

  // Phase 1: edits that keep the code valid, so each tree must equal a fresh parse exactly:
  // comment lines with multi-byte text inserted at line starts and removed again, blank lines,
  // and line ends switched between LF and CRLF.
  std::mt19937 rng(7u + static_cast<uint32_t>(std::string(GetParam().language).size()));
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const std::string comment = std::string(GetParam().line_comment) + " café 中文 😀 naïve";
  std::vector<size_t> inserted_comments;  // byte offsets of comment lines we added
  for (int step = 0; step < 150; ++step) {
    std::vector<size_t> line_starts = {0};
    for (size_t i = 0; i + 1 < reference.size(); ++i) {
      if (reference[i] == '\n') line_starts.push_back(i + 1);
    }
    size_t line = line_starts[pick(line_starts.size())];
    size_t kind = pick(4);
    if (kind == 0 && !inserted_comments.empty()) {  // remove a comment line added earlier
      size_t at = reference.find(comment);
      size_t end = reference.find('\n', at) + 1;
      apply_and_check(at, end, "", "removing a comment line");
      inserted_comments.pop_back();
    } else if (kind <= 1) {
      std::string text = comment + (pick(2) ? "\r\n" : "\n");
      apply_and_check(line, line, text, "comment line at " + std::to_string(line));
      inserted_comments.push_back(line);
    } else if (kind == 2) {
      apply_and_check(line, line, pick(2) ? "\r\n" : "\n", "blank line at " + std::to_string(line));
    } else {
      size_t eol = reference.find('\n', line);
      if (eol == std::string::npos) continue;
      if (eol > 0 && reference[eol - 1] == '\r') {
        apply_and_check(eol - 1, eol + 1, "\n", "CRLF -> LF at " + std::to_string(eol));
      } else {
        apply_and_check(eol, eol + 1, "\r\n", "LF -> CRLF at " + std::to_string(eol));
      }
    }
    if (HasFatalFailure()) return;
  }
  ASSERT_EQ(strict, 150) << "phase 1 must keep the sample free of errors";
  ASSERT_EQ(recovered_differently, 0);

  // Phase 2: random edits that break the code, then all of them undone.
  const std::string valid = reference;
  for (int step = 0; step < 300; ++step) {
    auto e = generator.next(reference);
    history.push_back({e.begin, reference.substr(e.begin, e.end - e.begin), e.text});
    apply_and_check(e.begin, e.end, e.text,
                    "edit " + std::to_string(step) + ": [" + std::to_string(e.begin) + ", " +
                        std::to_string(e.end) + ") -> `" + e.text + "`");
    if (HasFatalFailure()) return;
  }
  for (size_t i = history.size(); i-- > 0;) {
    const Applied& a = history[i];
    apply_and_check(a.begin, a.begin + a.inserted.size(), a.removed,
                    "undo of edit " + std::to_string(i));
    if (HasFatalFailure()) return;
  }
  ASSERT_EQ(reference, valid);
  EXPECT_FALSE(ts_node_has_error(ts_tree_root_node(doc.tree())));
  EXPECT_GT(strict, 150);
  std::cout << "[          ] " << lang->name << ": 750 edits, " << strict
            << " error-free states identical to a fresh parse; " << recovered_differently
            << " states with errors recovered differently\n";
}

INSTANTIATE_TEST_SUITE_P(AllLanguages, RandomEdits, ::testing::ValuesIn(kSamples),
                         [](const auto& info) { return std::string(info.param.language); });

TEST(DocumentTree, PointsCountBytesAndRowsAtLineFeeds) {
  const Language* lang = find_language("python");
  // "é" is 2 bytes, "中" 3, "😀" 4: columns are bytes.
  std::string text = "s = \"é中😀\"\r\nt = 1\r\n";
  DocumentTree doc(*lang, text);
  size_t at = text.find("t = 1");
  doc.edit(at, at + 1, "tt");
  text.replace(at, 1, "tt");
  TSNode root = ts_tree_root_node(doc.tree());
  TSNode second = ts_node_named_child(root, 1);
  ASSERT_FALSE(ts_node_is_null(second));
  EXPECT_EQ(ts_node_start_point(second).row, 1u);
  EXPECT_EQ(ts_node_start_point(second).column, 0u);
  TSNode first = ts_node_named_child(root, 0);
  EXPECT_EQ(ts_node_end_point(first).column, 4u + 2 + 2 + 3 + 4);  // s = "é中😀"
  // An edit after the multi-byte characters on the first line.
  size_t quote = text.find("\"\r\n");
  doc.edit(quote, quote, "ü");
  text.insert(quote, "ü");
  Tree fresh = fresh_parse(*lang, text);
  EXPECT_EQ(positions(ts_tree_root_node(doc.tree())), positions(ts_tree_root_node(fresh.get())));
}

// point_at, which starts from the nearest node, gives the point that counting from the start of
// the text gives, at every byte of real files (inside tokens, in whitespace, comments, at the
// ends) and of text with leading blank lines, CRLF and no final line break.
TEST(DocumentTree, PointAtEveryByteIsThePointCountedFromTheStart) {
  const std::pair<const char*, std::string> cases[] = {
      {"python", read_sample("inventory.py")},
      {"c", read_sample("ring_buffer.c")},
      {"tsx", read_sample("todo_list.tsx")},
      {"python", "\n\n  # lead\r\ndef f(x):\r\n    return x  \n\n\nz = [1,\n 2]"},
  };
  for (const auto& [name, text] : cases) {
    const Language* lang = language_named(name);
    ASSERT_NE(lang, nullptr) << name;
    DocumentTree doc(*lang, text);
    TSPoint expected{0, 0};
    for (uint32_t b = 0; b <= text.size(); ++b) {
      const TSPoint p = point_at(doc.tree(), text, b);
      ASSERT_EQ(p.row, expected.row) << name << " byte " << b;
      ASSERT_EQ(p.column, expected.column) << name << " byte " << b;
      if (b < text.size()) {
        if (text[b] == '\n') expected = {expected.row + 1, 0};
        else ++expected.column;
      }
    }
  }
}

TEST(DocumentTree, EditOutsideTheTextThrows) {
  DocumentTree doc(*find_language("go"), "package main\n");
  EXPECT_THROW(doc.edit(5, 4, "x"), std::out_of_range);
  EXPECT_THROW(doc.edit(0, 100, ""), std::out_of_range);
  EXPECT_EQ(doc.text(), "package main\n");
  doc.edit(13, 13, "func main() {}\n");
  EXPECT_FALSE(ts_node_has_error(ts_tree_root_node(doc.tree())));
}

TEST(DocumentTree, SnapshotKeepsItsVersionWhileTheDocumentMovesOn) {
  const Language* lang = find_language("rust");
  DocumentTree doc(*lang, "fn main() {}\n");
  auto snap = doc.snapshot(7);
  EXPECT_EQ(snap->version, 7);
  EXPECT_EQ(snap->language, lang);
  std::string before = sexp(snap->root());
  doc.edit(0, 0, "struct Point { x: i32 }\n");
  EXPECT_EQ(sexp(snap->root()), before);
  EXPECT_NE(sexp(ts_tree_root_node(doc.tree())), before);
  // The engine thread reads its copy while the I/O thread keeps editing the original.
  std::string read_there;
  std::thread engine([snap, &read_there] { read_there = sexp(snap->root()); });
  for (int i = 0; i < 50; ++i) doc.edit(0, 0, "// c\n");
  engine.join();
  EXPECT_EQ(read_there, before);
}

TEST(DocumentTrees, TracksOnlyLanguagesWithAGrammar) {
  DocumentTrees trees;
  trees.open("notes", "markdown", "file:///w/notes.md", "# Notes\n");
  EXPECT_EQ(trees.size(), 0u);
  EXPECT_EQ(trees.find("notes"), nullptr);
  EXPECT_EQ(trees.snapshot("notes", 1), nullptr);
  trees.edit("notes", 0, 1, "");  // ignored, not an error

  trees.open("main", "", "file:///w/main.py", "def f():\n    return 1\n");
  ASSERT_EQ(trees.size(), 1u);
  ASSERT_NE(trees.find("main"), nullptr);
  EXPECT_EQ(trees.find("main")->language().name, "python");
  trees.edit("main", 22, 22, "print(f())\n");
  EXPECT_EQ(trees.find("main")->text(), "def f():\n    return 1\nprint(f())\n");
  auto snap = trees.snapshot("main", 3);
  ASSERT_NE(snap, nullptr);
  EXPECT_EQ(snap->version, 3);
  EXPECT_FALSE(ts_node_has_error(snap->root()));

  // Reopened under a language without a grammar: no longer tracked.
  trees.open("main", "plaintext", "file:///w/main.txt", "text");
  EXPECT_EQ(trees.find("main"), nullptr);
  trees.open("main", "go", "file:///w/main.go", "package main\n");
  EXPECT_EQ(trees.find("main")->language().name, "go");
  trees.close("main");
  EXPECT_EQ(trees.size(), 0u);
  EXPECT_NE(snap->language, nullptr);  // a snapshot outlives its document
  EXPECT_FALSE(ts_node_is_null(snap->root()));
}

}  // namespace
}  // namespace ghostline::syntax
