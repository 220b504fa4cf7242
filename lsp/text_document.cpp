#include "lsp/text_document.h"

#include <algorithm>

#include "base/utf8.h"

namespace ghostline::lsp {
namespace {

// Length of the UTF-8 sequence starting at s[i] and its code point, or 0 if it is invalid.
size_t decode_utf8(std::string_view s, size_t i, char32_t* cp) {
  const size_t len = utf8_sequence_length(s.substr(i));
  if (len > 0) *cp = utf8_decode_lenient(s, i);
  return len;
}

int64_t units_of(char32_t cp, size_t utf8_len, PositionEncoding e) {
  switch (e) {
    case PositionEncoding::Utf8: return static_cast<int64_t>(utf8_len);
    case PositionEncoding::Utf16: return cp >= 0x10000 ? 2 : 1;
    case PositionEncoding::Utf32: return 1;
  }
  return 1;
}

}  // namespace

std::string_view to_string(PositionEncoding e) {
  switch (e) {
    case PositionEncoding::Utf8: return "utf-8";
    case PositionEncoding::Utf16: return "utf-16";
    case PositionEncoding::Utf32: return "utf-32";
  }
  return "utf-16";
}

std::optional<PositionEncoding> parse_position_encoding(std::string_view name) {
  if (name == "utf-8") return PositionEncoding::Utf8;
  if (name == "utf-16") return PositionEncoding::Utf16;
  if (name == "utf-32") return PositionEncoding::Utf32;
  return std::nullopt;
}

int64_t count_code_units(std::string_view utf8, PositionEncoding encoding) {
  if (encoding == PositionEncoding::Utf8) return static_cast<int64_t>(utf8.size());
  int64_t units = 0;
  for (size_t i = 0; i < utf8.size();) {
    char32_t cp;
    size_t len = decode_utf8(utf8, i, &cp);
    if (len == 0) {
      units += 1;
      i += 1;
    } else {
      units += units_of(cp, len, encoding);
      i += len;
    }
  }
  return units;
}

TextDocument::TextDocument(std::string uri, std::string language_id, int64_t version,
                           std::string text)
    : uri_(std::move(uri)),
      language_id_(std::move(language_id)),
      version_(version),
      text_(std::move(text)) {
  rebuild_line_index();
}

void TextDocument::rebuild_line_index() {
  line_starts_.clear();
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    // LSP line breaks: \n, \r\n and a lone \r.
    if (text_[i] == '\n') {
      line_starts_.push_back(i + 1);
    } else if (text_[i] == '\r') {
      if (i + 1 < text_.size() && text_[i + 1] == '\n') ++i;
      line_starts_.push_back(i + 1);
    }
  }
}

std::string_view TextDocument::line_text(size_t line) const {
  size_t begin = line_starts_[line];
  size_t end = line + 1 < line_starts_.size() ? line_starts_[line + 1] : text_.size();
  std::string_view s(text_.data() + begin, end - begin);
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

std::optional<size_t> TextDocument::offset_of(Position p, PositionEncoding encoding) const {
  if (p.line < 0 || p.character < 0) return std::nullopt;
  if (static_cast<size_t>(p.line) >= line_starts_.size()) return std::nullopt;
  std::string_view line = line_text(static_cast<size_t>(p.line));
  size_t base = line_starts_[p.line];
  int64_t units = 0;
  size_t i = 0;
  while (i < line.size() && units < p.character) {
    char32_t cp;
    size_t len = decode_utf8(line, i, &cp);
    if (len == 0) {
      units += 1;
      i += 1;
      continue;
    }
    int64_t u = units_of(cp, len, encoding);
    // A position inside a surrogate pair rounds up past the character.
    units += u;
    i += len;
  }
  return base + i;
}

Position TextDocument::position_of(size_t offset, PositionEncoding encoding) const {
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t line = static_cast<size_t>(it - line_starts_.begin()) - 1;
  std::string_view text = line_text(line);
  size_t in_line = std::min(offset - line_starts_[line], text.size());
  return {static_cast<int64_t>(line), count_code_units(text.substr(0, in_line), encoding)};
}

bool TextDocument::apply_change(const std::optional<Range>& range, std::string_view new_text,
                                PositionEncoding encoding) {
  if (!range) {
    text_.assign(new_text);
    rebuild_line_index();
    return true;
  }
  auto begin = offset_of(range->start, encoding);
  auto end = offset_of(range->end, encoding);
  if (!begin || !end || *end < *begin) return false;
  size_t first_line = static_cast<size_t>(range->start.line);
  text_.replace(*begin, *end - *begin, new_text);
  // Re-index from the start of the first touched line; a \r just before it may now pair with
  // an inserted \n, so step back one line to be safe.
  size_t from_line = first_line > 0 ? first_line - 1 : 0;
  line_starts_.resize(from_line + 1);
  for (size_t i = line_starts_[from_line]; i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      line_starts_.push_back(i + 1);
    } else if (text_[i] == '\r') {
      if (i + 1 < text_.size() && text_[i + 1] == '\n') ++i;
      line_starts_.push_back(i + 1);
    }
  }
  return true;
}

}  // namespace ghostline::lsp

