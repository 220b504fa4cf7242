// Stop rules and clean-up of generated text before it is shown as ghost text.
#pragma once

#include <string>
#include <string_view>

namespace ghostline::daemon {

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

// The text to show: cut at the stop point, without an incomplete UTF-8 tail, without trailing
// whitespace, and without the part that repeats the text already after the cursor. When the
// generation was cut short (deadline, token limit) before a stop point, its end is cut back to
// a clean boundary: the last whole line of a block, or the end of the last whole word.
std::string finish_completion(const CompletionShape& shape, std::string_view generated,
                              bool cut_short = false);

}  // namespace ghostline::daemon
