#include "syntax/post_process.h"
#include "base/text.h"

#include <algorithm>

namespace ghostline::syntax {
namespace {

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// Drops a trailing incomplete UTF-8 sequence (a token may end inside a character).
std::string_view whole_characters(std::string_view s) {
  size_t i = s.size(), back = 0;
  while (i > 0 && back < 4 && (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80) --i, ++back;
  if (i == 0) return s;
  unsigned char lead = static_cast<unsigned char>(s[i - 1]);
  size_t need = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 1;
  return back + 1 < need ? s.substr(0, i - 1) : s;
}

// The cut point: the end of the first line, or of the block (a blank line or max_lines).
size_t stop_point(const CompletionShape& shape, std::string_view g) {
  if (shape.single_line) return std::min(g.find('\n'), g.size());
  size_t lines = 0, pos = 0;
  for (;;) {
    size_t nl = g.find('\n', pos);
    if (nl == std::string_view::npos) return g.size();
    ++lines;
    // A blank line after some code ends the block.
    size_t next = g.find('\n', nl + 1);
    std::string_view next_line = g.substr(nl + 1, next == std::string_view::npos ? std::string_view::npos : next - nl - 1);
    if (lines >= static_cast<size_t>(shape.max_lines) || (next != std::string_view::npos && blank(next_line) && !blank(g.substr(0, nl))))
      return nl;
    pos = nl + 1;
  }
}

// The end of an interrupted generation at a clean boundary: after the last line break of a
// block, or before a trailing word that may be incomplete (kept when it is all there is).
std::string_view clean_end(const CompletionShape& shape, std::string_view g) {
  if (!shape.single_line) {
    size_t nl = g.rfind('\n');
    if (nl != std::string_view::npos && !blank(g.substr(0, nl))) return g.substr(0, nl);
  }
  size_t end = g.size();
  while (end > 0 && is_identifier_byte(g[end - 1])) --end;
  if (end == g.size() || blank(g.substr(0, end))) return g;
  return g.substr(0, end);
}

}  // namespace

CompletionShape shape_at(std::string_view text, size_t cursor) {
  CompletionShape shape;
  size_t line_start = text.rfind('\n', cursor == 0 ? 0 : cursor - 1);
  line_start = (line_start == std::string_view::npos || cursor == 0) ? 0 : line_start + 1;
  size_t line_end = std::min(text.find('\n', cursor), text.size());
  shape.rest_of_line = std::string(text.substr(cursor, line_end - cursor));
  if (!shape.rest_of_line.empty() && shape.rest_of_line.back() == '\r') shape.rest_of_line.pop_back();
  std::string_view before = text.substr(line_start, cursor - line_start);
  shape.single_line = !blank(before) || !blank(shape.rest_of_line);
  return shape;
}

bool should_stop(const CompletionShape& shape, std::string_view generated) {
  return stop_point(shape, generated) < generated.size();
}

bool StopRules::append(std::string_view piece) {
  for (char c : piece) {
    if (stopped_) break;
    if (c != '\n') {
      if (c != ' ' && c != '\t' && c != '\r') line_blank_ = false;
      continue;
    }
    if (shape_.single_line) {
      stopped_ = true;
      break;
    }
    // The line between the previous break and this one is complete: a blank line after some
    // code ends the block.
    if (lines_ > 0 && line_blank_ && code_before_last_break_) stopped_ = true;
    // Any earlier break counts as code before this one, as stop_point's blank() sees it.
    code_before_last_break_ = lines_ > 0 || !line_blank_;
    ++lines_;
    if (lines_ >= shape_.max_lines) stopped_ = true;
    line_blank_ = true;
  }
  return stopped_;
}

std::string finish_completion(const CompletionShape& shape, std::string_view generated, bool cut_short) {
  const size_t stop = stop_point(shape, generated);
  std::string_view g = whole_characters(generated.substr(0, stop));
  if (cut_short && stop == generated.size()) g = clean_end(shape, g);
  g = trim_right(g);
  // The model often re-types what already follows the cursor (a closing bracket, the rest of
  // a line): the editor shows that text already, so drop it from the end of the completion.
  std::string_view rest = trim_right(shape.rest_of_line);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  if (!rest.empty() && g.size() >= rest.size() && g.substr(g.size() - rest.size()) == rest)
    g = trim_right(g.substr(0, g.size() - rest.size()));
  return std::string(g);
}

}  // namespace ghostline::syntax
