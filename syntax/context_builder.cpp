#include "syntax/context_builder.h"

#include <algorithm>
#include <unordered_set>

#include "base/text.h"
#include "syntax/document_tree.h"
#include "syntax/language.h"
#include "syntax/query.h"

namespace ghostline::syntax {
namespace {

// Text after the cursor that a completion may come before: closing brackets and quotes, and
// the punctuation that ends a statement.
bool trivial_rest(std::string_view rest) {
  return std::all_of(rest.begin(), rest.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == ')' || c == ']' || c == '}' || c == '"' ||
           c == '\'' || c == '`' || c == ';' || c == ',' || c == ':';
  });
}

std::string_view line_at_row(std::string_view text, uint32_t row) {
  size_t begin = 0;
  for (uint32_t r = 0; r < row; ++r) {
    const size_t nl = text.find('\n', begin);
    if (nl == std::string_view::npos) return {};
    begin = nl + 1;
  }
  const size_t end = std::min(text.find('\n', begin), text.size());
  return text.substr(begin, end - begin);
}

bool ends_with(std::string_view s, std::string_view end) {
  return s.size() >= end.size() && s.substr(s.size() - end.size()) == end;
}

// Whether the cursor is inside `node`, a comment or string literal. At its very end it is
// inside only when the literal is not closed there: a line comment runs to the line end, and a
// string the user is still typing has a missing (zero-width) closing quote or an error.
bool cursor_inside(TSNode node, std::string_view text, size_t cursor, bool comment) {
  const size_t begin = ts_node_start_byte(node), end = ts_node_end_byte(node);
  if (cursor <= begin || cursor > end) return false;
  if (cursor < end) return true;
  if (ts_node_has_error(node)) return true;
  const uint32_t n = ts_node_child_count(node);
  if (n > 0 && ts_node_is_missing(ts_node_child(node, n - 1))) return true;
  if (!comment) return false;
  const std::string_view body = text.substr(begin, end - begin);
  return !(ends_with(body, "*/") || ends_with(body, "]]") || ends_with(body, "-->"));
}

void classify_literal(const TreeSnapshot& tree, std::string_view text, size_t cursor,
                      CompletionContext& c) {
  const TSQuery* q = tree.language->query(QueryKind::Comments);
  if (!q) return;
  const uint32_t from = static_cast<uint32_t>(cursor > 0 ? cursor - 1 : 0);
  const uint32_t to = static_cast<uint32_t>(std::min(cursor + 1, text.size()));
  bool in_code = false;
  for_each_capture(q, tree.root(), text, from, to, [&](const Capture& cap) {
    if (cap.name == "code") {  // an interpolation inside a string literal
      const size_t b = ts_node_start_byte(cap.node), e = ts_node_end_byte(cap.node);
      in_code |= b < cursor && cursor < e;
      return true;
    }
    const bool comment = cap.name == "comment";
    if (!cursor_inside(cap.node, text, cursor, comment || cap.name == "docstring")) return true;
    if (cap.name == "docstring") c.in_docstring = true;
    else if (comment) c.in_comment = true;
    else if (cap.name == "string") c.in_string = true;
    return true;
  });
  if (in_code) c.in_string = false;
  if (c.in_docstring) c.in_comment = c.in_string = false;
}

// The indentation a line of the innermost block around the cursor must exceed to stay in it:
// that of the block's header line. -1 when the cursor is in no block.
int block_min_indent(const TreeSnapshot& tree, std::string_view text, size_t cursor) {
  const TSQuery* q = tree.language->query(QueryKind::Blocks);
  if (!q) return -1;
  const uint32_t at = static_cast<uint32_t>(cursor);
  TSNode best{};
  bool found = false;
  for_each_capture(q, tree.root(), text, at > 0 ? at - 1 : 0,
                   std::min<uint32_t>(at + 1, text.size()), [&](const Capture& cap) {
                     const uint32_t b = ts_node_start_byte(cap.node),
                                    e = ts_node_end_byte(cap.node);
                     if (b > at || e < at) return true;
                     if (!found || (ts_node_end_byte(cap.node) - b) <
                                       (ts_node_end_byte(best) - ts_node_start_byte(best))) {
                       best = cap.node;
                       found = true;
                     }
                     return true;
                   });
  if (!found) return -1;
  TSNode header = ts_node_parent(best);
  if (ts_node_is_null(header)) header = best;
  const uint32_t header_row = ts_node_start_point(header).row;
  // The cursor on the header's own line is not in the body yet.
  const uint32_t cursor_row =
      static_cast<uint32_t>(std::count(text.begin(), text.begin() + cursor, '\n'));
  if (cursor_row <= header_row) return -1;
  return indent_columns(line_at_row(text, header_row)) + 1;
}

}  // namespace

const char* decision_name(Decision decision) {
  switch (decision) {
    case Decision::None:
      return "none";
    case Decision::SingleLine:
      return "single-line";
    case Decision::MultiLine:
      return "multi-line";
  }
  return "?";
}

CompletionContext build_context(const TreeSnapshot* tree, std::string_view text, size_t cursor,
                                const ContextOptions& options) {
  CompletionContext c;
  cursor = std::min(cursor, text.size());
  c.shape = shape_at(text, cursor);
  c.shape.max_lines = options.max_lines;
  c.decision = c.shape.single_line ? Decision::SingleLine : Decision::MultiLine;
  c.reason = c.shape.single_line ? "line with text" : "block";
  if (options.line_mode == LineMode::Line && !c.shape.single_line) {
    c.shape.single_line = true;
    c.decision = Decision::SingleLine;
    c.reason = "line mode";
  } else if (options.line_mode == LineMode::Block && c.shape.single_line &&
             c.shape.rest_of_line.find_first_not_of(" \t\r") == std::string::npos) {
    // The end of a line of code: its rest and the lines after it, which end where the line's
    // own block ends (a line indented less than it).
    c.shape.single_line = false;
    c.shape.min_indent = c.shape.base_indent;
    c.decision = Decision::MultiLine;
    c.reason = "block mode";
  }

  if (tree && tree->language) {
    c.language = tree->language->name;
    const TSNode node = ts_node_named_descendant_for_byte_range(
        tree->root(), static_cast<uint32_t>(cursor), static_cast<uint32_t>(cursor));
    if (!ts_node_is_null(node)) c.cursor_node = ts_node_type(node);
    classify_literal(*tree, text, cursor, c);
    if (!c.shape.single_line) {
      if (const int min_indent = block_min_indent(*tree, text, cursor); min_indent >= 0)
        c.shape.min_indent = std::max(c.shape.min_indent, min_indent);
    }
  }

  auto none = [&](const char* why) {
    c.decision = Decision::None;
    c.reason = why;
    return c;
  };
  if (cursor < text.size() && is_identifier_byte(text[cursor]))
    return none("in the middle of a word");
  if (c.in_docstring && !options.in_docstrings) return none("in a docstring");
  if (c.in_comment && !options.in_comments) return none("in a comment");
  if (c.in_string && !options.in_strings) return none("in a string");
  if (!options.fim && !trivial_rest(c.shape.rest_of_line)) return none("code after the cursor");
  if (c.in_comment || c.in_docstring || c.in_string) {
    // Prose and literals: the rest of the line, not a block.
    c.shape.single_line = true;
    c.decision = Decision::SingleLine;
    c.reason = c.in_string ? "in a string" : c.in_comment ? "in a comment" : "in a docstring";
  }
  return c;
}

std::vector<std::string> referenced_names(const TreeSnapshot& tree, std::string_view text,
                                          size_t begin, size_t end) {
  std::vector<std::string> names;
  const TSQuery* q = tree.language ? tree.language->query(QueryKind::References) : nullptr;
  if (!q || begin >= end) return names;
  std::unordered_set<std::string_view> seen;
  for_each_capture(q, tree.root(), text, static_cast<uint32_t>(begin), static_cast<uint32_t>(end),
                   [&](const Capture& cap) {
                     if (cap.name.substr(0, 9) != "reference") return true;
                     const uint32_t b = ts_node_start_byte(cap.node),
                                    e = ts_node_end_byte(cap.node);
                     if (b < begin || e > end || e <= b || e - b > 128) return true;
                     std::string_view name = text.substr(b, e - b);
                     if (seen.insert(name).second) names.emplace_back(name);
                     return true;
                   });
  return names;
}

}  // namespace ghostline::syntax
