// The LSP base protocol: messages framed by Content-Length headers, the codec both ends of a
// connection use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ghostline::lsp {

// A problem in the byte stream itself: the decoder reports it and resynchronizes.
struct FramingError {
  std::string message;
};

// Splits a byte stream into message bodies. Bodies larger than the limit are skipped without
// being buffered; malformed headers are reported and the decoder looks for the next header.
class FrameDecoder {
 public:
  using Event = std::variant<std::string, FramingError>;

  explicit FrameDecoder(size_t max_body_bytes) : max_body_bytes_(max_body_bytes) {}

  // Appends bytes and returns every complete message or framing error they finish.
  std::vector<Event> feed(std::string_view bytes);

  // True when a message is partially received (a disconnect now loses it).
  bool mid_message() const { return !buffer_.empty() || skip_remaining_ > 0 || body_length_ >= 0; }

 private:
  bool parse_header(std::vector<Event>& out);

  size_t max_body_bytes_;
  std::string buffer_;
  int64_t body_length_ = -1;  // >= 0 once a header block has been parsed
  uint64_t skip_remaining_ = 0;
};

// Whether a JSON text nests arrays and objects deeper than `max_depth`. Copying, comparing and
// serializing a parsed value recurse once per level, so a message of a few megabytes of '['
// would overflow the stack; such a message is refused before it is parsed.
bool exceeds_nesting_depth(std::string_view json_text, size_t max_depth);

// Frames a serialized JSON body with its Content-Length header.
std::string encode_frame(std::string_view body);

}  // namespace ghostline::lsp
