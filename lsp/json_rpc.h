// JSON-RPC 2.0 over the LSP base protocol: Content-Length framed messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ghostline::lsp {

// Error codes named by JSON-RPC 2.0 and the LSP specification.
enum class ErrorCode : int {
  ParseError = -32700,
  InvalidRequest = -32600,
  MethodNotFound = -32601,
  InvalidParams = -32602,
  InternalError = -32603,
  ServerNotInitialized = -32002,
  UnknownErrorCode = -32001,
  RequestFailed = -32803,
  ServerCancelled = -32802,
  ContentModified = -32801,
  RequestCancelled = -32800,
};

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

nlohmann::json make_response(const nlohmann::json& id, nlohmann::json result);
nlohmann::json make_error(const nlohmann::json& id, ErrorCode code, std::string_view message);
nlohmann::json make_notification(std::string_view method, nlohmann::json params);
nlohmann::json make_request(const nlohmann::json& id, std::string_view method, nlohmann::json params);

}  // namespace ghostline::lsp
