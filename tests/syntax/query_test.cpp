// The query runner: captures in document order within a byte range, predicates applied (tree-sitter
// 0.20.7 leaves them to the caller), helper captures hidden, early stop.
#include "syntax/query.h"

#include "syntax/document_tree.h"
#include "syntax/language.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ghostline::syntax {
namespace {

// A query of the test's own, deleted (and forgotten by the predicate cache) at the end.
class OwnQuery {
 public:
  OwnQuery(const Language& lang, std::string_view source) {
    uint32_t offset = 0;
    TSQueryError error = TSQueryErrorNone;
    query_ =
        ts_query_new(lang.ts, source.data(), static_cast<uint32_t>(source.size()), &offset, &error);
    if (!query_)
      throw std::runtime_error("test query does not compile at " + std::to_string(offset));
  }
  ~OwnQuery() {
    forget_query_predicates(query_);
    ts_query_delete(query_);
  }
  OwnQuery(const OwnQuery&) = delete;
  OwnQuery& operator=(const OwnQuery&) = delete;
  const TSQuery* get() const { return query_; }

 private:
  TSQuery* query_;
};

const std::string kPython =
    "import os\n"
    "MAX_SIZE = 10\n"
    "name = 'x'\n"
    "def helper(a):\n"
    "    return os.path.join(a, 'b')\n"
    "def main():\n"
    "    helper(MAX_SIZE)\n"
    "    print(name)\n";

std::vector<std::string> capture_texts(const TSQuery* q, const DocumentTree& doc, uint32_t begin,
                                       uint32_t end, std::vector<std::string>* names = nullptr) {
  std::vector<std::string> out;
  const std::string& text = doc.text();
  for_each_capture(q, ts_tree_root_node(doc.tree()), text, begin, end, [&](const Capture& c) {
    out.push_back(text.substr(ts_node_start_byte(c.node),
                              ts_node_end_byte(c.node) - ts_node_start_byte(c.node)));
    if (names) names->emplace_back(c.name);
    return true;
  });
  return out;
}

uint32_t size_of(const std::string& s) { return static_cast<uint32_t>(s.size()); }

TEST(ForEachCapture, EqAndNotEqFilterByText) {
  const Language& py = *find_language("python");
  DocumentTree doc(py, kPython);
  OwnQuery eq(py, "((call function: (identifier) @f) (#eq? @f \"print\"))");
  EXPECT_EQ(capture_texts(eq.get(), doc, 0, size_of(kPython)), std::vector<std::string>{"print"});
  OwnQuery differs(py, "((call function: (identifier) @f) (#not-eq? @f \"print\"))");
  EXPECT_EQ(capture_texts(differs.get(), doc, 0, size_of(kPython)),
            std::vector<std::string>{"helper"});
}

TEST(ForEachCapture, EqBetweenTwoCaptures) {
  const Language& py = *find_language("python");
  std::string text = "x = x\ny = z\n";
  DocumentTree doc(py, text);
  OwnQuery q(py, "((assignment left: (identifier) @l right: (identifier) @r) (#eq? @l @r))");
  EXPECT_EQ(capture_texts(q.get(), doc, 0, size_of(text)), (std::vector<std::string>{"x", "x"}));
}

TEST(ForEachCapture, MatchAndNotMatchUseRegexes) {
  const Language& py = *find_language("python");
  DocumentTree doc(py, kPython);
  OwnQuery upper(py, "((identifier) @c (#match? @c \"^[A-Z][A-Z_]+$\"))");
  EXPECT_EQ(capture_texts(upper.get(), doc, 0, size_of(kPython)),
            (std::vector<std::string>{"MAX_SIZE", "MAX_SIZE"}));
  OwnQuery lower(py, "((function_definition name: (identifier) @n) (#not-match? @n \"^help\"))");
  EXPECT_EQ(capture_texts(lower.get(), doc, 0, size_of(kPython)), std::vector<std::string>{"main"});
}

TEST(ForEachCapture, AnyOf) {
  const Language& py = *find_language("python");
  DocumentTree doc(py, kPython);
  OwnQuery q(py, "((call function: (_) @f) (#any-of? @f \"print\" \"os.path.join\" \"len\"))");
  EXPECT_EQ(capture_texts(q.get(), doc, 0, size_of(kPython)),
            (std::vector<std::string>{"os.path.join", "print"}));
}

TEST(ForEachCapture, HelperCapturesAreHiddenAndDirectivesIgnored) {
  const Language& py = *find_language("python");
  DocumentTree doc(py, kPython);
  OwnQuery q(py,
             "((call function: (identifier) @_f arguments: (argument_list) @args)"
             " (#eq? @_f \"helper\") (#set! kind \"call\"))");
  std::vector<std::string> names;
  EXPECT_EQ(capture_texts(q.get(), doc, 0, size_of(kPython), &names),
            std::vector<std::string>{"(MAX_SIZE)"});
  EXPECT_EQ(names, std::vector<std::string>{"args"});
}

TEST(ForEachCapture, StaysInTheByteRangeInDocumentOrderAndStopsWhenAsked) {
  const Language& py = *find_language("python");
  DocumentTree doc(py, kPython);
  const TSQuery* refs = py.query(QueryKind::References);
  uint32_t main_at = static_cast<uint32_t>(kPython.find("def main"));
  std::vector<std::string> names;
  auto texts = capture_texts(refs, doc, main_at, size_of(kPython), &names);
  ASSERT_FALSE(texts.empty());
  EXPECT_EQ(texts.front(), "helper");
  EXPECT_EQ(names.front(), "reference.call");
  for (const auto& t : texts) EXPECT_NE(t, "join") << "outside the range";
  uint32_t last = 0;
  for_each_capture(refs, ts_tree_root_node(doc.tree()), kPython, 0, size_of(kPython),
                   [&](const Capture& c) {
                     EXPECT_GE(ts_node_start_byte(c.node), last);
                     last = ts_node_start_byte(c.node);
                     return true;
                   });
  int seen = 0;
  for_each_capture(refs, ts_tree_root_node(doc.tree()), kPython, 0, size_of(kPython),
                   [&](const Capture&) { return ++seen < 2; });
  EXPECT_EQ(seen, 2);
}

TEST(ForEachMatch, GroupsADefinitionWithItsName) {
  const Language& py = *find_language("python");
  DocumentTree doc(py, kPython);
  std::vector<std::string> seen;
  for_each_match(py.query(QueryKind::Definitions), ts_tree_root_node(doc.tree()), kPython, 0,
                 size_of(kPython), [&](std::span<const Capture> match) {
                   std::string kind, name;
                   for (const auto& c : match) {
                     if (c.name == "name") {
                       name = kPython.substr(ts_node_start_byte(c.node),
                                             ts_node_end_byte(c.node) - ts_node_start_byte(c.node));
                     } else {
                       kind = c.name;
                     }
                   }
                   seen.push_back(kind + " " + name);
                   return true;
                 });
  // The #match?/#not-match? pair splits module-level names into constants and variables.
  EXPECT_EQ(seen,
            (std::vector<std::string>{"definition.constant MAX_SIZE", "definition.variable name",
                                      "definition.function helper", "definition.function main"}));
}

TEST(ForEachCapture, UnsupportedPredicateIsALoudError) {
  const Language& py = *find_language("python");
  DocumentTree doc(py, kPython);
  OwnQuery q(py, "((identifier) @i (#is-upper? @i))");
  EXPECT_THROW(capture_texts(q.get(), doc, 0, size_of(kPython)), std::runtime_error);
  OwnQuery bad_regex(py, "((identifier) @i (#match? @i \"(unclosed\"))");
  EXPECT_THROW(capture_texts(bad_regex.get(), doc, 0, size_of(kPython)), std::runtime_error);
}

TEST(ForEachCapture, NullQueryOrNodeYieldsNothing) {
  const Language& py = *find_language("python");
  DocumentTree doc(py, kPython);
  int calls = 0;
  for_each_capture(nullptr, ts_tree_root_node(doc.tree()), kPython, 0, size_of(kPython),
                   [&](const Capture&) { return ++calls > 0; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace ghostline::syntax
