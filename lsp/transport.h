// The LSP base protocol: messages framed by Content-Length headers. FrameDecoder and
// encode_frame are the codec both ends of a connection use; JsonTransport is the server's end,
// between the bytes of a pipe or a socket and a session that sees only parsed messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "lsp/json_rpc.h"

namespace ghostline::lsp {

class Recorder;

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

// Deeper than any LSP message needs; see exceeds_nesting_depth.
inline constexpr size_t kMaxNestingDepth = 64;

// Whether a JSON text nests arrays and objects deeper than `max_depth`. Copying, comparing and
// serializing a parsed value recurse once per level, so a message of a few megabytes of '['
// would overflow the stack; such a message is refused before it is parsed.
bool exceeds_nesting_depth(std::string_view json_text, size_t max_depth);

// Frames a serialized JSON body with its Content-Length header.
std::string encode_frame(std::string_view body);

// Where a session's outgoing messages go (its transport, a test).
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  virtual void send(const nlohmann::json& message) = 0;
  // Ends the connection after what was sent has been written.
  virtual void close() = 0;
};

// What a transport hands the messages it reads to: the session.
class MessageHandler {
 public:
  virtual ~MessageHandler() = default;
  // A message as parsed: any JSON value, its JSON-RPC envelope not yet checked.
  virtual void on_message(const nlohmann::json& message) = 0;
  // Bytes that carried no message (a framing error, a body that is not JSON or nests too
  // deep): to be answered with `code` and a null id.
  virtual void on_malformed(ErrorCode code, const std::string& problem) = 0;
  // The client went away (EOF or an error): its work is cancelled.
  virtual void on_disconnect() = 0;
  // True once the handler takes no more messages (after exit, or a connection it closed).
  virtual bool exited() const = 0;
};

// Where a transport writes its frames (stdout, a socket).
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual void write(std::string frame) = 0;
  // Ends the connection after what was written has been sent.
  virtual void close() = 0;
};

// One connection's framing and recording (clangd's JSONTransport): bytes in, parsed messages to
// a handler; parsed messages out, serialized and framed. Each body is checked for nesting depth
// before it is parsed, and mirrored to the recorder (if any) as it arrived.
class JsonTransport final : public MessageSink {
 public:
  JsonTransport(int session_id, FrameSink& out, size_t max_message_bytes, Recorder* recorder);

  // Bytes from the client: what they complete goes to `handler` in order, until it has exited
  // (the rest is dropped).
  void feed(std::string_view bytes, MessageHandler& handler);
  // The client went away: a message it cut off is logged, and `handler` is told.
  void disconnect(MessageHandler& handler);

  // Serialized with invalid UTF-8 replaced (a client's text may carry it), then framed.
  void send(const nlohmann::json& message) override;
  void close() override;

 private:
  void deliver(std::string_view body, MessageHandler& handler);

  int session_id_;
  FrameSink& out_;
  Recorder* recorder_;
  FrameDecoder decoder_;
};

}  // namespace ghostline::lsp
