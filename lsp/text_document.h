// An open document: its UTF-8 text, a line index, and conversion between LSP positions
// (line, character counted in the negotiated encoding) and byte offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ghostline::lsp {

enum class PositionEncoding { Utf8, Utf16, Utf32 };

std::string_view to_string(PositionEncoding e);
std::optional<PositionEncoding> parse_position_encoding(std::string_view name);

struct Position {
  int64_t line = 0;
  int64_t character = 0;
  bool operator==(const Position&) const = default;
};

struct Range {
  Position start;
  Position end;
  bool operator==(const Range&) const = default;
};

// Length of a UTF-8 byte sequence in code units of `encoding`. Bytes that are not valid UTF-8
// count as one code unit each (and as U+FFFD, one UTF-16 unit), so any input converts.
int64_t count_code_units(std::string_view utf8, PositionEncoding encoding);

class TextDocument {
 public:
  TextDocument(std::string uri, std::string language_id, int64_t version, std::string text);

  const std::string& uri() const { return uri_; }
  const std::string& language_id() const { return language_id_; }
  int64_t version() const { return version_; }
  const std::string& text() const { return text_; }
  size_t line_count() const { return line_starts_.size(); }

  // The byte offset of a position. A character past the end of its line means the end of the
  // line (as the LSP specification says); a line past the last line is an error (nullopt).
  std::optional<size_t> offset_of(Position p, PositionEncoding encoding) const;
  Position position_of(size_t offset, PositionEncoding encoding) const;

  // Applies one content change: a range replacement, or (no range) the whole text.
  // Returns false, leaving the document unchanged, when the range is out of bounds.
  bool apply_change(const std::optional<Range>& range, std::string_view new_text,
                    PositionEncoding encoding);
  void set_version(int64_t version) { version_ = version; }

 private:
  void rebuild_line_index();
  std::string_view line_text(size_t line) const;  // without the line break

  std::string uri_;
  std::string language_id_;
  int64_t version_;
  std::string text_;
  std::vector<size_t> line_starts_;  // byte offset of each line's first byte
};

}  // namespace ghostline::lsp
