#include "syntax/post_process.h"
#include "base/text.h"

#include <algorithm>
#include <vector>

namespace ghostline::syntax {
namespace {

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view trim(std::string_view s) {
  s = trim_right(s);
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  return s;
}

// Drops a trailing incomplete UTF-8 sequence (a token may end inside a character).
std::string_view whole_characters(std::string_view s) {
  size_t i = s.size(), back = 0;
  while (i > 0 && back < 4 && (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80) --i, ++back;
  if (i == 0) return s;
  unsigned char lead = static_cast<unsigned char>(s[i - 1]);
  size_t need = lead < 0x80             ? 1
                : (lead & 0xE0) == 0xC0 ? 2
                : (lead & 0xF0) == 0xE0 ? 3
                : (lead & 0xF8) == 0xF0 ? 4
                                        : 1;
  return back + 1 < need ? s.substr(0, i - 1) : s;
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

bool opens_block(std::string_view line) {
  line = trim_right(line);
  if (line.empty()) return false;
  const char last = line.back();
  if (last == ':' || last == '{' || last == '(' || last == '[') return true;
  auto ends_with_word = [&](std::string_view w) {
    return line.size() >= w.size() && line.substr(line.size() - w.size()) == w &&
           (line.size() == w.size() || !is_identifier_byte(line[line.size() - w.size() - 1]));
  };
  return ends_with_word("=>") || ends_with_word("do") || ends_with_word("then") ||
         ends_with_word("->");
}

constexpr bool is_closer(char c) { return c == ')' || c == ']' || c == '}'; }
constexpr char opener_of(char c) { return c == ')' ? '(' : c == ']' ? '[' : '{'; }

// Offsets in `s` of the closing brackets that close nothing opened in `s` (strings skipped).
std::vector<size_t> unmatched_closers(std::string_view s) {
  std::vector<char> open;
  std::vector<size_t> unmatched;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'' || c == '`') quote = c;
    else if (c == '(' || c == '[' || c == '{') open.push_back(c);
    else if (is_closer(c)) {
      if (!open.empty() && open.back() == opener_of(c)) open.pop_back();
      else unmatched.push_back(i);
    }
  }
  return unmatched;
}

// The lines after the first indented as the document is: tabs for every 4 columns where it
// uses tabs, spaces where it uses spaces.
std::string reindent(const CompletionShape& shape, std::string_view g) {
  std::string out;
  out.reserve(g.size());
  size_t pos = 0;
  bool first = true;
  while (pos <= g.size()) {
    const size_t nl = std::min(g.find('\n', pos), g.size());
    std::string_view line = g.substr(pos, nl - pos);
    if (!first && shape.indent_tabs >= 0) {
      size_t lead = 0;
      while (lead < line.size() && (line[lead] == ' ' || line[lead] == '\t')) ++lead;
      const std::string_view indentation = line.substr(0, lead);
      const bool wrong = shape.indent_tabs ? indentation.find(' ') != std::string_view::npos
                                           : indentation.find('\t') != std::string_view::npos;
      if (wrong) {
        const int cols = indent_columns(indentation);
        out += shape.indent_tabs ? std::string(cols / 4, '\t') + std::string(cols % 4, ' ')
                                 : std::string(cols, ' ');
        line.remove_prefix(lead);
      }
    }
    out += line;
    if (nl == g.size()) break;
    out += '\n';
    pos = nl + 1;
    first = false;
  }
  return out;
}

}  // namespace

int indent_columns(std::string_view line) {
  int cols = 0;
  for (char c : line) {
    if (c == ' ') ++cols;
    else if (c == '\t') cols = (cols / 4 + 1) * 4;
    else break;
  }
  return cols;
}

CompletionShape shape_at(std::string_view text, size_t cursor) {
  CompletionShape shape;
  cursor = std::min(cursor, text.size());
  size_t line_start = cursor == 0 ? std::string_view::npos : text.rfind('\n', cursor - 1);
  line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
  size_t line_end = std::min(text.find('\n', cursor), text.size());
  shape.rest_of_line = std::string(text.substr(cursor, line_end - cursor));
  if (!shape.rest_of_line.empty() && shape.rest_of_line.back() == '\r')
    shape.rest_of_line.pop_back();
  std::string_view before = text.substr(line_start, cursor - line_start);
  shape.line_before_cursor = std::string(before);
  shape.base_indent = indent_columns(before);

  // The non-blank lines around the cursor's line.
  std::string_view previous;
  for (size_t end = line_start; end > 0 && previous.empty();) {  // `end`: after a line break
    const size_t nl = end - 1;
    size_t begin = nl == 0 ? std::string_view::npos : text.rfind('\n', nl - 1);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    if (std::string_view line = text.substr(begin, nl - begin); !blank(line)) previous = line;
    end = begin;
  }
  shape.previous_line = std::string(trim(previous));
  if (!previous.empty() && (previous.front() == '\t' || previous.front() == ' '))
    shape.indent_tabs = previous.front() == '\t' ? 1 : 0;
  for (size_t begin = line_end + 1; begin < text.size();) {
    size_t end = std::min(text.find('\n', begin), text.size());
    std::string_view line = text.substr(begin, end - begin);
    if (!blank(line)) {
      // A line of closing brackets also closes inner blocks the completion writes: the block's
      // end is found by indentation, not by it.
      const std::string_view t = trim(line);
      if (std::any_of(t.begin(), t.end(), [](char c) { return is_identifier_byte(c); }))
        shape.next_line = std::string(t);
      break;
    }
    begin = end + 1;
  }

  const bool rest_blank = blank(shape.rest_of_line);
  if (blank(before) && rest_blank) {
    // A blank line: a block at the cursor's indentation. The block the previous line opens
    // holds everything indented deeper than that line; otherwise the cursor's indentation is
    // the level of the block it is in.
    shape.single_line = false;
    shape.min_indent = opens_block(previous)   ? indent_columns(previous) + 1
                       : shape.base_indent > 0 ? shape.base_indent
                                               : -1;
  } else if (rest_blank && opens_block(before)) {
    // At the end of a line that opens a block: its body.
    shape.single_line = false;
    shape.min_indent = indent_columns(before) + 1;
  }
  return shape;
}

bool reaches_stop_point(const CompletionShape& shape, std::string_view generated) {
  StopRules rules(shape);
  return rules.append(generated);
}

// The first character of a line other than the first that is not indentation: its indentation
// is known now.
void StopRules::first_char_of_line() {
  if (lines_ == 0 || shape_.single_line) return;
  if (shape_.min_indent >= 0 && line_indent_ < shape_.min_indent) {
    stop_at(line_start_ - 1);  // it closes the enclosing block
    return;
  }
  if (went_deeper_ && blank_since_code_ && line_indent_ <= shape_.base_indent) {
    stop_at(last_code_end_);  // a sibling of what was generated
    return;
  }
  if (line_indent_ > shape_.base_indent) went_deeper_ = true;
}

void StopRules::end_line(size_t at) {
  if (shape_.single_line) {
    stop_at(at);
    return;
  }
  if (lines_ > 0 && !line_blank_ && !shape_.next_line.empty() && trim(line_) == shape_.next_line) {
    stop_at(line_start_ - 1);  // the code after the cursor begins here
    return;
  }
  if (line_blank_) {
    // A blank line after some code ends the block when the block is not known.
    if (lines_ > 0 && code_before_last_break_ && shape_.min_indent < 0 && !went_deeper_) {
      stop_at(line_start_ - 1);
      return;
    }
    if (lines_ > 0 || code_before_last_break_) blank_since_code_ = true;
  } else {
    blank_since_code_ = false;
    last_code_end_ = at;
  }
  // Any earlier break counts as code before this one.
  code_before_last_break_ = lines_ > 0 || !line_blank_;
  ++lines_;
  if (lines_ >= shape_.max_lines) stop_at(at);
}

bool StopRules::append(std::string_view piece) {
  for (char c : piece) {
    if (stopped_) break;
    const size_t at = pos_++;
    if (c == '\n') {
      end_line(at);
      line_start_ = at + 1;
      line_indent_ = 0;
      line_blank_ = true;
      line_.clear();
      continue;
    }
    if (!shape_.next_line.empty() && line_.size() <= shape_.next_line.size() + 64) line_ += c;
    if (!line_blank_) continue;
    if (c == ' ') ++line_indent_;
    else if (c == '\t') line_indent_ = (line_indent_ / 4 + 1) * 4;
    else if (c != '\r') {
      line_blank_ = false;
      first_char_of_line();
    }
  }
  return stopped_;
}

FinishedCompletion finish(const CompletionShape& shape, std::string_view generated,
                          bool cut_short) {
  StopRules rules(shape);
  rules.append(generated);
  return finish(rules, generated, cut_short);
}

FinishedCompletion finish(const StopRules& rules, std::string_view generated, bool cut_short) {
  const CompletionShape& shape = rules.shape();
  const bool reached_stop = rules.stopped();
  std::string_view g =
      whole_characters(generated.substr(0, std::min(rules.cut(), generated.size())));
  if (cut_short && !reached_stop) g = clean_end(shape, g);
  g = trim_right(g);

  FinishedCompletion out;
  // The model often re-types what already follows the cursor (a closing bracket, the rest of
  // a line): the editor shows that text already, so drop it from the end of the completion.
  std::string_view rest = trim_right(shape.rest_of_line);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  if (!rest.empty() && g.size() >= rest.size() && g.substr(g.size() - rest.size()) == rest)
    g = trim_right(g.substr(0, g.size() - rest.size()));

  // Closing brackets the completion types that close nothing of its own: when the text after
  // the cursor starts with the same ones, the completion replaces them.
  std::string_view after = shape.rest_of_line;
  size_t replaced = 0;
  for (size_t at : unmatched_closers(g)) {
    if (replaced >= after.size() || after[replaced] != g[at]) break;
    ++replaced;
  }
  out.replace_after = replaced;

  // A line that only repeats the one before it is no completion.
  if (!g.empty() && !shape.previous_line.empty()) {
    const size_t nl = g.find('\n');
    const std::string line = shape.line_before_cursor + std::string(g.substr(0, nl));
    if (trim(line) == shape.previous_line && (nl == std::string_view::npos || blank(g.substr(nl))))
      g = {};
  }
  if (trim(g).empty()) g = {};
  out.text = reindent(shape, g);
  if (out.text.empty()) out.replace_after = 0;
  return out;
}

std::string finish_completion(const CompletionShape& shape, std::string_view generated,
                              bool cut_short) {
  return finish(shape, generated, cut_short).text;
}

}  // namespace ghostline::syntax
