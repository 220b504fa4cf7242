// JSON-RPC 2.0 over the LSP base protocol: Content-Length framed messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

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

// A message read as JSON-RPC 2.0 as LSP uses it: a request has a method and an id (an integer
// or a string), a notification a method and no id, a response an id and a result or an error.
struct Envelope {
  enum class Kind { Request, Notification, Response, Invalid };
  Kind kind = Kind::Invalid;
  // Request: its id. Response and Invalid: its id when that is an integer or a string, else
  // null; an invalid message is answered with it.
  nlohmann::json id;
  std::string method;  // Request and Notification
  // Request and Notification: an object or an array (an empty object when there are none or
  // they are null, as many clients send). Points into the message, which must outlive it.
  const nlohmann::json* params = nullptr;
  std::string problem;  // Invalid: what is wrong, for an InvalidRequest error
};

// Reads the envelope of a parsed message. A response is taken as one only when
// `accept_responses`; otherwise it is invalid like any other message without a method.
Envelope read_envelope(const nlohmann::json& message, bool accept_responses);

nlohmann::json make_response(const nlohmann::json& id, nlohmann::json result);
nlohmann::json make_error(const nlohmann::json& id, ErrorCode code, std::string_view message);
nlohmann::json make_notification(std::string_view method, nlohmann::json params);
nlohmann::json make_request(const nlohmann::json& id, std::string_view method, nlohmann::json params);

}  // namespace ghostline::lsp
