// Where the cursor is and what to generate there: whether to complete at all, one line or a
// block, and where the block ends. Works from the document's syntax tree when its language has a
// grammar, from the text alone otherwise.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "syntax/post_process.h"

namespace ghostline::syntax {

struct TreeSnapshot;
struct Language;

// How many lines the user lets a completion have (the `completion` setting). Auto: the syntax
// decides; Line: one at most; Block: several wherever the cursor is at the end of a line of code
// (not only where a block opens), still one inside comments and strings.
enum class LineMode { Auto, Line, Block };

struct ContextOptions {
  bool fim = false;            // the model sees the text after the cursor
  bool in_comments = false;    // complete inside comments
  bool in_docstrings = true;   // inside docstrings and doc comments
  bool in_strings = false;     // inside other string literals
  int max_lines = 8;           // of a multi-line completion
  LineMode line_mode = LineMode::Auto;
};

enum class Decision { None, SingleLine, MultiLine };
const char* decision_name(Decision decision);

struct CompletionContext {
  Decision decision = Decision::SingleLine;
  std::string reason;        // why this decision, for the request's stats
  CompletionShape shape;     // stop rules and post-processing
  std::string language;      // the grammar used, "" for plain text
  std::string cursor_node;   // the type of the smallest named node at the cursor
  bool in_comment = false, in_string = false, in_docstring = false;
};

// `tree` may be null (no grammar, or no tree for this text): then only the text decides. When
// given, it must be the tree of exactly `text`.
CompletionContext build_context(const TreeSnapshot* tree, std::string_view text, size_t cursor,
                                const ContextOptions& options);

// The names used in bytes [begin, end) of the tree's text that may be defined elsewhere (calls,
// types, other references), each once, in order of first use.
std::vector<std::string> referenced_names(const TreeSnapshot& tree, std::string_view text,
                                          size_t begin, size_t end);

}  // namespace ghostline::syntax
