// Stop rules and clean-up of generated text before it is shown as ghost text.
#pragma once

#include <string>
#include <utility>
#include <string_view>

namespace ghostline::syntax {

// What to generate at a cursor: the rest of one line when the cursor's line has text, a block
// of lines when it is blank.
struct CompletionShape {
  bool single_line = true;
  int max_lines = 8;
  std::string rest_of_line;  // text after the cursor up to the line break
};

CompletionShape shape_at(std::string_view text, size_t cursor);

// Whether generation can stop now, given the text generated so far.
bool should_stop(const CompletionShape& shape, std::string_view generated);

// should_stop as the text arrives: each piece costs time in proportion to its own length, not
// to everything generated before it.
class StopRules {
 public:
  explicit StopRules(CompletionShape shape) : shape_(std::move(shape)) {}
  // Appends the text of one more token; true once the text has reached its stop point (and
  // from then on).
  bool append(std::string_view piece);

 private:
  CompletionShape shape_;
  bool stopped_ = false;
  int lines_ = 0;                 // line breaks seen
  bool line_blank_ = true;        // the line being written has only spaces, tabs and CRs so far
  bool code_before_last_break_ = false;  // the text before the last line break is not blank
};

// The text to show: cut at the stop point, without an incomplete UTF-8 tail, without trailing
// whitespace, and without the part that repeats the text already after the cursor. When the
// generation was cut short (deadline, token limit) before a stop point, its end is cut back to
// a clean boundary: the last whole line of a block, or the end of the last whole word.
std::string finish_completion(const CompletionShape& shape, std::string_view generated,
                              bool cut_short = false);

}  // namespace ghostline::syntax
