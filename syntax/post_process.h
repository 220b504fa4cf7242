// Stop rules and clean-up of generated text before it is shown as ghost text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace ghostline::syntax {

// What to generate at a cursor and where it ends. The ContextBuilder fills it from the syntax
// tree; shape_at() from the text alone.
struct CompletionShape {
  bool single_line = true;
  int max_lines = 8;
  std::string rest_of_line;  // text after the cursor up to the line break
  // Multi-line: a generated line indented less than this many columns closes the enclosing
  // block (a dedent in Python, the closing brace's line elsewhere) and is not part of the
  // completion; -1 when the block is not known (then a blank line after code ends it).
  int min_indent = -1;
  // The indentation (columns) of the line the completion starts on. A completion that went
  // deeper than this and comes back to it after a blank line has started a sibling (the next
  // definition, the next paragraph of statements) and ends before it.
  int base_indent = 0;
  // The first non-blank line after the cursor's line, trimmed, unless it is only punctuation
  // (closing brackets): a generated line equal to it means the model has reached the code that
  // is already there.
  std::string next_line;
  // The cursor's line up to the cursor, and the non-blank line before it (trimmed): a
  // completion that only repeats the previous line is dropped.
  std::string line_before_cursor;
  std::string previous_line;
  // How the document indents, from the lines before the cursor: 1 with tabs, 0 with spaces,
  // -1 unknown. The lines of a block are indented the same way.
  int indent_tabs = -1;
};

// The shape from the text alone: the rest of one line when the cursor's line has text, a
// block when it is blank (or ends with a block opener such as ':' or '{' at the cursor).
CompletionShape shape_at(std::string_view text, size_t cursor);

// Columns of indentation of `line` (a tab advances to the next multiple of 4).
int indent_columns(std::string_view line);

// Whether the text generated so far has reached its stop point (StopRules over all of it).
bool reaches_stop_point(const CompletionShape& shape, std::string_view generated);

// The stop rules as the text arrives, a token's text at a time; the work per piece is in
// proportion to its own length. finish() cuts at the same point.
class StopRules {
 public:
  explicit StopRules(CompletionShape shape) : shape_(std::move(shape)) {}
  // Appends the text of one more token; true once the text has reached its stop point (and
  // from then on).
  bool append(std::string_view piece);
  // Where the completion ends in the text appended so far (its size while not stopped).
  size_t cut() const { return stopped_ ? cut_ : pos_; }
  bool stopped() const { return stopped_; }
  const CompletionShape& shape() const { return shape_; }

 private:
  void stop_at(size_t cut) {
    stopped_ = true;
    cut_ = cut;
  }
  void end_line(size_t at);
  void first_char_of_line();

  CompletionShape shape_;
  bool stopped_ = false;
  size_t cut_ = 0;
  size_t pos_ = 0;                // bytes appended
  int lines_ = 0;                 // line breaks seen
  size_t line_start_ = 0;         // offset of the line being written
  int line_indent_ = 0;           // its indentation so far (columns)
  bool line_blank_ = true;        // it has only spaces, tabs and CRs so far
  std::string line_;              // its text, kept only when it may repeat shape_.next_line
  bool code_before_last_break_ = false;  // the text before the last line break is not blank
  bool went_deeper_ = false;      // a line was indented deeper than the base
  bool blank_since_code_ = false;  // a blank line came after the last line with code
  size_t last_code_end_ = 0;      // the line break after the last line with code
};

struct FinishedCompletion {
  std::string text;          // the text to insert
  size_t replace_after = 0;  // bytes after the cursor that it replaces (closing brackets)
};

// The text to show: cut at the stop point, without an incomplete UTF-8 tail, without trailing
// whitespace, and without the part that repeats the text already after the cursor. Closing
// brackets that the completion types over replace those after the cursor instead of doubling
// them. A completion that is empty or only repeats the previous line is dropped. When the
// generation was cut short (deadline, token limit) before a stop point, its end is cut back to
// a clean boundary: the last whole line of a block, or the end of the last whole word.
FinishedCompletion finish(const CompletionShape& shape, std::string_view generated,
                          bool cut_short = false);

// finish() of text that went through `rules` as it arrived (`generated` is exactly what was
// appended): the rules' cut is taken as it is, not found again.
FinishedCompletion finish(const StopRules& rules, std::string_view generated,
                          bool cut_short = false);

// finish(), when the caller inserts at the cursor only (the text alone: the interface every
// version of this file has, which tools/bench/stop_rules_eval.cpp measures older versions by).
std::string finish_completion(const CompletionShape& shape, std::string_view generated,
                              bool cut_short = false);

}  // namespace ghostline::syntax
