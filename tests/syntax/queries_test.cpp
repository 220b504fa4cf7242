// Each language's queries on a real-looking sample file: the sample parses without errors, and
// each query yields the captures the context builder relies on at chosen places.
#include "syntax/document_tree.h"
#include "syntax/language.h"
#include "syntax/query.h"
#include "syntax/sample_file.h"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ghostline::syntax {
namespace {

using testing::language_named;
using testing::read_sample;

// A capture of `name` from the `kind` query whose node's text is `text` (or starts with it).
struct ExpectCapture {
  QueryKind kind;
  std::string name;
  std::string text;
  bool prefix = true;
};
ExpectCapture exact(QueryKind kind, std::string name, std::string text) {
  return {kind, std::move(name), std::move(text), false};
}
// A match of definitions.scm with @<kind> and @name == `name`.
struct ExpectDefinition {
  std::string kind;  // "definition.function", ...
  std::string name;
};
// The innermost @block around the first occurrence of `inside` is the body of (or is) the node
// whose text starts with `header`.
struct ExpectBlock {
  std::string inside;
  std::string header;
};

struct Sample {
  std::string language;
  std::string file;
  std::vector<ExpectCapture> captures;
  std::vector<ExpectCapture> absent;  // captures that must not exist (exact text or prefix)
  std::vector<ExpectDefinition> definitions;
  std::vector<ExpectDefinition> not_definitions;
  std::vector<ExpectBlock> blocks;
  std::vector<std::string> not_blocks;  // text prefixes that no @block may have
};

using QK = QueryKind;

std::vector<Sample> samples() {
  return {
      {"python", "inventory.py",
       {{QK::Comments, "comment", "# Items at or under the threshold"},
        exact(QK::Comments, "string", "\"utf-8\""),
        {QK::Comments, "string", "f\"unknown sku"},
        {QK::Comments, "docstring", "\"\"\"Inventory bookkeeping"},
        {QK::Comments, "docstring", "\"\"\"One stock-keeping unit"},
        exact(QK::Imports, "import", "import json"),
        exact(QK::Imports, "import", "from pathlib import Path"),
        exact(QK::Imports, "import", "from __future__ import annotations"),
        exact(QK::References, "reference.call", "open"),
        exact(QK::References, "reference.call", "getLogger"),
        exact(QK::References, "reference.type", "Path"),
        exact(QK::References, "reference", "json")},
       {exact(QK::Comments, "docstring", "\"amount must be positive\""),
        exact(QK::Comments, "docstring", "\"utf-8\"")},
       {{"definition.class", "Item"},
        {"definition.class", "Inventory"},
        {"definition.method", "is_low"},
        {"definition.method", "restock"},
        {"definition.function", "summarize"},
        {"definition.constant", "LOW_STOCK_THRESHOLD"},
        {"definition.variable", "log"}},
       {{"definition.constant", "log"}, {"definition.function", "is_low"}},
       {{"return self.quantity <= LOW", "def is_low"},
        {"raise ValueError(f\"unknown", "except KeyError"},
        {"log.warning(\"large restock", "elif amount > 1000"}},
       {"{\n    \"A1\"", "(\n            (item for"}},

      {"javascript", "cart.js",
       {{QK::Comments, "comment", "// Shopping cart state"},
        exact(QK::Comments, "string", "\"./currency.js\""),
        {QK::Comments, "string", "`Total: ${"},
        {QK::Comments, "docstring", "/**\n * A cart of line items"},
        {QK::Imports, "import", "import { formatPrice }"},
        exact(QK::Imports, "import", "const storage = require(\"./storage\");"),
        exact(QK::References, "reference.call", "formatPrice"),
        exact(QK::References, "reference.call", "save"),
        exact(QK::References, "reference.call", "Map"),
        exact(QK::References, "reference", "storage")},
       {{QK::Comments, "docstring", "// Shopping"}},
       {{"definition.class", "Cart"},
        {"definition.method", "add"},
        {"definition.method", "total"},
        {"definition.function", "renderTotal"},
        {"definition.function", "debounce"},
        {"definition.function", "CartBadge"},
        {"definition.constant", "TAX_RATE"},
        {"definition.constant", "DEFAULT_OPTIONS"}},
       {{"definition.constant", "debounce"}},
       {{"sum += line.price", "for (const line"},
        {"this.options = {", "constructor(options"},
        {"#items = new Map", "class Cart"},
        {"element.classList.remove", "switch (cart.options.currency)"}},
       {"{\n  currency", "{ sku, price"}},

      {"typescript", "scheduler.ts",
       {{QK::Comments, "comment", "// Runs jobs"},
        exact(QK::Comments, "string", "\"events\""),
        {QK::Comments, "docstring", "/**\n * Schedules jobs"},
        {QK::Imports, "import", "import { EventEmitter }"},
        {QK::Imports, "import", "import type { Logger }"},
        exact(QK::References, "reference.call", "pump"),
        exact(QK::References, "reference.call", "shift"),
        exact(QK::References, "reference.call", "AbortController"),
        exact(QK::References, "reference.type", "Logger"),
        exact(QK::References, "reference.type", "AbortSignal"),
        exact(QK::References, "reference.type", "EventEmitter"),
        exact(QK::References, "reference.type", "Disposable")},
       {exact(QK::References, "reference.type", "JobState")},
       {{"definition.interface", "Job"},
        {"definition.type", "JobState"},
        {"definition.type", "Priority"},
        {"definition.class", "Scheduler"},
        {"definition.method", "submit"},
        {"definition.method", "pump"},
        {"definition.function", "createScheduler"},
        {"definition.constant", "MAX_CONCURRENCY"}},
       {},
       {{"this.queue.unshift(job);", "if (priority"},
        {"id: string;", "interface Job"},
        {"Low,", "enum Priority"},
        {"this.running--;", "() => {"}},
       {}},

      {"tsx", "todo_list.tsx",
       {{QK::Comments, "comment", "// A filterable"},
        exact(QK::Comments, "string", "\"react\""),
        {QK::Comments, "docstring", "/**\n * Shows the to-dos"},
        {QK::Imports, "import", "import React"},
        {QK::Imports, "import", "import { TodoItem }"},
        exact(QK::References, "reference.call", "useState"),
        exact(QK::References, "reference.call", "map"),
        exact(QK::References, "reference", "TodoItem"),
        exact(QK::References, "reference.type", "Todo"),
        exact(QK::References, "reference.type", "Filter")},
       {},
       {{"definition.interface", "Todo"},
        {"definition.type", "Filter"},
        {"definition.function", "TodoList"},
        {"definition.constant", "FILTERS"}},
       {},
       {{"return todos.filter((t) => !t.done);", "switch (filter)"},
        {"const [filter, setFilter]", "function TodoList"}},
       {"[\"all\""}},

      {"c", "ring_buffer.c",
       {{QK::Comments, "comment", "/* A fixed-size"},
        {QK::Comments, "comment", "// Unknown values"},
        exact(QK::Comments, "string", "\"ring_buffer.h\""),
        exact(QK::Comments, "string", "\"corrupt\""),
        {QK::Comments, "docstring", "/** Puts one byte"},
        exact(QK::Imports, "import", "#include <stddef.h>\n"),
        exact(QK::Imports, "import", "#include \"ring_buffer.h\"\n"),
        exact(QK::References, "reference.call", "ring_get"),
        exact(QK::References, "reference.type", "ring_t"),
        exact(QK::References, "reference", "ring")},
       {{QK::Comments, "docstring", "// Unknown"}, {QK::Comments, "docstring", "/* A fixed"}},
       {{"definition.function", "ring_put"},
        {"definition.function", "ring_status_name"},
        {"definition.function", "RING_NEXT"},
        {"definition.type", "ring_t"},
        {"definition.type", "ring"},
        {"definition.type", "ring_status"},
        {"definition.constant", "RING_CAPACITY"},
        {"definition.constant", "RING_FULL"},
        {"definition.variable", "status_names"}},
       {},
       {{"return RING_FULL;", "if (next == ring->tail)"},
        {"size_t head;", "struct ring"},
        {"RING_EMPTY,\n}", "enum ring_status {"},
        {"n++;", "while (n < max"}},
       {"{\n    \"ok\""}},

      {"cpp", "matrix.cpp",
       {{QK::Comments, "comment", "// Dense row-major"},
        exact(QK::Comments, "string", "\"solver/matrix.h\""),
        exact(QK::Comments, "string", "\"\\n\""),
        {QK::Comments, "docstring", "/// A rows x cols"},
        exact(QK::Imports, "import", "#include <vector>\n"),
        exact(QK::Imports, "import", "#include \"solver/matrix.h\"\n"),
        exact(QK::References, "reference.call", "at"),
        exact(QK::References, "reference.call", "abs"),
        exact(QK::References, "reference.type", "Matrix"),
        exact(QK::References, "reference.type", "vector"),
        exact(QK::References, "reference", "std")},
       {{QK::Comments, "docstring", "// Dense"}, {QK::Comments, "docstring", "// namespace"}},
       {{"definition.class", "Matrix"},
        {"definition.method", "at"},
        {"definition.method", "rows"},
        {"definition.method", "multiply"},
        {"definition.function", "clamp"},
        {"definition.module", "layout"},
        {"definition.variable", "kEpsilon"}},
       {},
       {{"result.at(i, j) += a", "for (size_t j"},
        {"Matrix multiply(const Matrix& other) const;", "class Matrix"},
        {"constexpr double kEpsilon", "namespace layout"},
        {"return value < low", "T clamp("}},
       {"{\n      8,"}},

      {"go", "ratelimit.go",
       {{QK::Comments, "comment", "// Package ratelimit"},
        exact(QK::Comments, "string", "\"slow down\""),
        exact(QK::Comments, "string", "\"net/http\""),
        {QK::Comments, "docstring", "// Bucket refills"},
        {QK::Comments, "docstring", "// Take removes one token"},
        {QK::Imports, "import", "import (\n\t\"errors\""},
        exact(QK::References, "reference.call", "Lock"),
        exact(QK::References, "reference.call", "min"),
        exact(QK::References, "reference.call", "HandlerFunc"),
        exact(QK::References, "reference.type", "Mutex"),
        exact(QK::References, "reference.type", "Bucket"),
        exact(QK::References, "reference", "errors")},
       {{QK::Comments, "docstring", "// Package"}},
       {{"definition.class", "Bucket"},
        {"definition.function", "NewBucket"},
        {"definition.function", "Middleware"},
        {"definition.method", "Take"},
        {"definition.type", "Clock"},
        {"definition.module", "ratelimit"},
        {"definition.constant", "DefaultBurst"},
        {"definition.variable", "ErrLimited"}},
       {{"definition.type", "Bucket"}},
       {{"return ErrLimited", "if b.tokens < 1"},
        {"mu     sync.Mutex", "struct {"},
        {"next.ServeHTTP(w, r)", "default:"},
        {"http.Error(w, \"slow down\"", "case errors.Is"}},
       {"{\n\t\"/login\"", "{tokens:"}},

      {"rust", "tokenizer.rs",
       {{QK::Comments, "comment", "// Skip whitespace"},
        exact(QK::Comments, "string", "\"{n}\""),
        exact(QK::Comments, "string", "'.'"),
        {QK::Comments, "docstring", "/// One lexical token."},
        {QK::Comments, "docstring", "//! A tokenizer"},
        exact(QK::Imports, "import", "use std::collections::HashMap;"),
        exact(QK::References, "reference.call", "peekable"),
        exact(QK::References, "reference.call", "new"),
        exact(QK::References, "reference.call", "write"),
        exact(QK::References, "reference.type", "HashMap"),
        exact(QK::References, "reference.type", "Token"),
        exact(QK::References, "reference", "Lexer")},
       {{QK::Comments, "docstring", "// Skip"}},
       {{"definition.class", "Token"},
        {"definition.class", "Lexer"},
        {"definition.method", "new"},
        {"definition.method", "number"},
        {"definition.method", "next"},
        {"definition.method", "fmt"},
        {"definition.function", "tokenize"},
        {"definition.constant", "MAX_DEPTH"}},
       {{"definition.function", "number"}},
       {{"break;", "if !(c.is_ascii_digit()"},
        {"type Item = Token;", "impl<'a> Iterator"},
        {"Number(f64),", "pub enum Token"},
        {"'+' | '-'", "match c"}},
       {"{ chars: source"}},

      {"java", "OrderService.java",
       {{QK::Comments, "comment", "// Reserve first"},
        exact(QK::Comments, "string", "\"too many lines: \""),
        {QK::Comments, "docstring", "/**\n * Places and cancels"},
        exact(QK::Imports, "import", "import java.util.List;"),
        exact(QK::References, "reference.call", "reserve"),
        exact(QK::References, "reference.call", "IllegalArgumentException"),
        exact(QK::References, "reference.call", "ArrayList"),
        exact(QK::References, "reference.type", "StockRepository"),
        exact(QK::References, "reference", "stock"),
        exact(QK::References, "reference", "Instant")},
       {{QK::Comments, "docstring", "// Reserve"}},
       {{"definition.class", "OrderService"},
        {"definition.class", "OrderLine"},
        {"definition.interface", "StockRepository"},
        {"definition.type", "Status"},
        {"definition.method", "place"},
        {"definition.method", "OrderService"},
        {"definition.constant", "MAX_LINES"},
        {"definition.module", "com.example.shop.orders"}},
       {{"definition.constant", "stock"}},
       {{"throw new IllegalArgumentException", "if (lines.size()"},
        {"private static final int MAX_LINES", "public class OrderService"},
        {"return \"cancelled\";", "case CANCELLED:"},
        {"OPEN,", "enum Status"}},
       {}},

      {"lua", "queue.lua",
       {{QK::Comments, "comment", "-- A double-ended"},
        exact(QK::Comments, "string", "\"json\""),
        {QK::Comments, "docstring", "--- Creates an empty queue."},
        exact(QK::Imports, "import", "local json = require(\"json\")"),
        exact(QK::Imports, "import", "require \"strict\""),
        exact(QK::References, "reference.call", "setmetatable"),
        exact(QK::References, "reference.call", "encode"),
        exact(QK::References, "reference.call", "format"),
        exact(QK::References, "reference", "string"),
        exact(QK::References, "reference", "json")},
       {{QK::Comments, "docstring", "-- A double"}},
       {{"definition.function", "new"},
        {"definition.method", "push"},
        {"definition.method", "pop"},
        {"definition.function", "count"},
        {"definition.function", "size"},
        {"definition.module", "M"},
        {"definition.variable", "DEFAULT_CAPACITY"}},
       {{"definition.variable", "M"}},
       {{"return nil", "if self.first > self.last"},
        {"self.last = self.last + 1", "function M:push"},
        {"parts[#parts + 1]", "for i = self.first"},
        {"table.remove(parts)", "while #parts > 10"}},
       {"{ __index = M }"}},
  };
}

std::string_view node_text(TSNode node, std::string_view text) {
  return text.substr(ts_node_start_byte(node), ts_node_end_byte(node) - ts_node_start_byte(node));
}

// The first ERROR or MISSING node, as "row:column type", for a readable failure.
std::optional<std::string> first_error(TSNode node) {
  if (ts_node_is_missing(node) || std::string_view(ts_node_type(node)) == "ERROR") {
    TSPoint p = ts_node_start_point(node);
    return std::to_string(p.row + 1) + ":" + std::to_string(p.column + 1) + " " +
           (ts_node_is_missing(node) ? "MISSING " : "") + ts_node_type(node);
  }
  for (uint32_t i = 0; i < ts_node_child_count(node); ++i) {
    if (auto e = first_error(ts_node_child(node, i))) return e;
  }
  return std::nullopt;
}

struct Captured {
  std::string name;
  std::string text;
  TSNode node;
};

std::vector<Captured> captures(const Language& lang, QueryKind kind, const DocumentTree& doc) {
  std::vector<Captured> out;
  const std::string& text = doc.text();
  for_each_capture(
      lang.query(kind), ts_tree_root_node(doc.tree()), text, 0, static_cast<uint32_t>(text.size()),
      [&](const Capture& c) {
        out.push_back({std::string(c.name), std::string(node_text(c.node, text)), c.node});
        return true;
      });
  return out;
}

bool has(const std::vector<Captured>& all, const ExpectCapture& e) {
  for (const auto& c : all) {
    if (c.name != e.name) continue;
    if (e.prefix ? c.text.starts_with(e.text) : c.text == e.text) return true;
  }
  return false;
}

class SampleQueries : public ::testing::TestWithParam<Sample> {
 protected:
  void SetUp() override {
    lang_ = language_named(GetParam().language);
    ASSERT_NE(lang_, nullptr);
    doc_ = std::make_unique<DocumentTree>(*lang_, read_sample(GetParam().file));
  }
  const Language* lang_ = nullptr;
  std::unique_ptr<DocumentTree> doc_;
};

TEST_P(SampleQueries, SampleIsRealSizedAndParsesWithoutErrors) {
  const std::string& text = doc_->text();
  auto lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_GE(lines, 30);
  EXPECT_LE(lines, 80);
  TSNode root = ts_tree_root_node(doc_->tree());
  auto error = first_error(root);
  EXPECT_FALSE(error.has_value()) << GetParam().file << ":" << error.value_or("");
  EXPECT_FALSE(ts_node_has_error(root));
}

TEST_P(SampleQueries, CapturesAtChosenPlaces) {
  for (const auto& e : GetParam().captures) {
    EXPECT_TRUE(has(captures(*lang_, e.kind, *doc_), e))
        << query_kind_name(e.kind) << ".scm: no @" << e.name << " on `" << e.text << "`";
  }
  for (const auto& e : GetParam().absent) {
    EXPECT_FALSE(has(captures(*lang_, e.kind, *doc_), e))
        << query_kind_name(e.kind) << ".scm: unexpected @" << e.name << " on `" << e.text << "`";
  }
}

TEST_P(SampleQueries, EveryQueryYieldsCaptures) {
  for (QueryKind kind : kAllQueryKinds) {
    EXPECT_FALSE(captures(*lang_, kind, *doc_).empty()) << query_kind_name(kind);
  }
}

TEST_P(SampleQueries, DefinitionsComeWithTheirNames) {
  struct Found {
    std::string kind, name;
  };
  std::vector<Found> found;
  const std::string& text = doc_->text();
  for_each_match(lang_->query(QueryKind::Definitions), ts_tree_root_node(doc_->tree()), text, 0,
                 static_cast<uint32_t>(text.size()), [&](std::span<const Capture> match) {
                   std::string kind, name;
                   for (const Capture& c : match) {
                     if (c.name == "name") name = node_text(c.node, text);
                     if (c.name.starts_with("definition.")) kind = c.name;
                   }
                   EXPECT_FALSE(kind.empty()) << "a match without @definition.*: " << name;
                   EXPECT_FALSE(name.empty()) << "a match without @name: " << kind;
                   found.push_back({kind, name});
                   return true;
                 });
  auto contains = [&](const ExpectDefinition& d) {
    return std::any_of(found.begin(), found.end(),
                       [&](const Found& f) { return f.kind == d.kind && f.name == d.name; });
  };
  for (const auto& d : GetParam().definitions) {
    EXPECT_TRUE(contains(d)) << "no @" << d.kind << " with @name `" << d.name << "`";
  }
  for (const auto& d : GetParam().not_definitions) {
    EXPECT_FALSE(contains(d)) << "unexpected @" << d.kind << " with @name `" << d.name << "`";
  }
}

TEST_P(SampleQueries, BlocksAreBodiesNotLiterals) {
  auto blocks = captures(*lang_, QueryKind::Blocks, *doc_);
  for (const auto& c : blocks) EXPECT_EQ(c.name, "block");
  const std::string& text = doc_->text();
  for (const auto& e : GetParam().blocks) {
    size_t at = text.find(e.inside);
    ASSERT_NE(at, std::string::npos) << e.inside;
    const Captured* innermost = nullptr;
    for (const auto& c : blocks) {
      if (ts_node_start_byte(c.node) <= at && at + e.inside.size() <= ts_node_end_byte(c.node) &&
          (!innermost || c.text.size() < innermost->text.size())) {
        innermost = &c;
      }
    }
    ASSERT_NE(innermost, nullptr) << "no @block around `" << e.inside << "`";
    TSNode parent = ts_node_parent(innermost->node);
    bool ok = innermost->text.starts_with(e.header) ||
              (!ts_node_is_null(parent) && node_text(parent, text).starts_with(e.header));
    EXPECT_TRUE(ok) << "the @block around `" << e.inside << "` is `"
                    << innermost->text.substr(0, 40) << "...`, not the body of `" << e.header
                    << "`";
  }
  for (const auto& literal : GetParam().not_blocks) {
    for (const auto& c : blocks) {
      EXPECT_FALSE(c.text.starts_with(literal)) << "a literal captured as @block: " << literal;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllLanguages, SampleQueries, ::testing::ValuesIn(samples()),
                         [](const auto& info) { return info.param.language; });

TEST(SampleQueries, EveryLanguageHasASample) {
  auto all = samples();
  for (const Language* lang : all_languages()) {
    EXPECT_TRUE(std::any_of(all.begin(), all.end(),
                            [&](const Sample& s) { return s.language == lang->name; }))
        << lang->name;
  }
}

}  // namespace
}  // namespace ghostline::syntax
