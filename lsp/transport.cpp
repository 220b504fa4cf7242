#include "lsp/transport.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "lsp/recorder.h"

namespace ghostline::lsp {
namespace {

constexpr std::string_view kHeaderEnd = "\r\n\r\n";
constexpr size_t kMaxHeaderBytes = 4096;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

// Parses the header block at the front of buffer_. Returns false when more bytes are needed.
bool FrameDecoder::parse_header(std::vector<Event>& out) {
  size_t end = buffer_.find(kHeaderEnd);
  if (end == std::string::npos) {
    if (buffer_.size() > kMaxHeaderBytes) {
      out.push_back(FramingError{"header block longer than 4096 bytes without an empty line"});
      // Resynchronize at the next plausible header start.
      size_t next = buffer_.find("Content-Length", 1);
      buffer_.erase(0, next == std::string::npos ? buffer_.size() : next);
    }
    return false;
  }
  std::string_view headers(buffer_.data(), end);
  int64_t length = -1;
  std::string_view length_text;
  std::string problem;
  // Two different lengths leave the body undelimitable: neither is trusted.
  std::string conflict;
  while (!headers.empty()) {
    size_t eol = headers.find("\r\n");
    std::string_view line = headers.substr(0, eol);
    headers = eol == std::string_view::npos ? std::string_view{} : headers.substr(eol + 2);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      problem = "malformed header line '" + std::string(line.substr(0, 80)) + "'";
      continue;
    }
    std::string_view name = trim(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      uint64_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || n > (uint64_t{1} << 40)) {
        problem = "invalid Content-Length '" + std::string(value.substr(0, 40)) + "'";
      } else if (length >= 0 && static_cast<uint64_t>(length) != n) {
        if (conflict.empty())
          conflict = "conflicting Content-Length headers '" + std::string(length_text) + "' and '" +
                     std::string(value.substr(0, 40)) + "'";
      } else {
        length = static_cast<int64_t>(n);
        length_text = value.substr(0, 40);
      }
    }
  }
  if (!conflict.empty()) {
    length = -1;
    problem = std::move(conflict);
  }
  buffer_.erase(0, end + kHeaderEnd.size());
  if (length < 0) {
    out.push_back(
        FramingError{problem.empty() ? "message without a Content-Length header" : problem});
    // Without a length the body cannot be delimited: drop bytes up to the next header.
    size_t next = buffer_.find("Content-Length");
    buffer_.erase(0, next == std::string::npos ? buffer_.size() : next);
    return true;
  }
  if (!problem.empty()) out.push_back(FramingError{problem});
  if (static_cast<uint64_t>(length) > max_body_bytes_) {
    out.push_back(FramingError{"message body of " + std::to_string(length) +
                               " bytes exceeds the limit of " + std::to_string(max_body_bytes_) +
                               " bytes (--max-message-mib); skipped"});
    skip_remaining_ = static_cast<uint64_t>(length);
    return true;
  }
  body_length_ = length;
  return true;
}

std::vector<FrameDecoder::Event> FrameDecoder::feed(std::string_view bytes) {
  std::vector<Event> out;
  if (skip_remaining_ > 0) {
    size_t n = std::min<uint64_t>(skip_remaining_, bytes.size());
    skip_remaining_ -= n;
    bytes.remove_prefix(n);
  }
  buffer_.append(bytes);
  for (;;) {
    if (skip_remaining_ > 0) {
      size_t n = std::min<uint64_t>(skip_remaining_, buffer_.size());
      skip_remaining_ -= n;
      buffer_.erase(0, n);
      if (skip_remaining_ > 0) break;
    }
    if (body_length_ < 0) {
      if (!parse_header(out)) break;
      continue;
    }
    if (buffer_.size() < static_cast<size_t>(body_length_)) break;
    out.emplace_back(buffer_.substr(0, body_length_));
    buffer_.erase(0, body_length_);
    body_length_ = -1;
  }
  return out;
}

bool exceeds_nesting_depth(std::string_view json_text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : json_text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

std::string encode_frame(std::string_view body) {
  std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  frame.append(body);
  return frame;
}

JsonTransport::JsonTransport(int session_id, FrameSink& out, size_t max_message_bytes,
                             Recorder* recorder)
    : session_id_(session_id), out_(out), recorder_(recorder), decoder_(max_message_bytes) {}

void JsonTransport::feed(std::string_view bytes, MessageHandler& handler) {
  for (auto& event : decoder_.feed(bytes)) {
    if (handler.exited()) return;
    if (auto* body = std::get_if<std::string>(&event)) {
      deliver(*body, handler);
    } else {
      handler.on_malformed(ErrorCode::ParseError, std::get<FramingError>(event).message);
    }
  }
}

void JsonTransport::deliver(std::string_view body, MessageHandler& handler) {
  if (exceeds_nesting_depth(body, kMaxNestingDepth)) {
    if (recorder_) recorder_->record(session_id_, nullptr, body);
    handler.on_malformed(ErrorCode::InvalidRequest,
                         "message nests arrays or objects deeper than " +
                             std::to_string(kMaxNestingDepth) + " levels");
    return;
  }
  const nlohmann::json message = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (recorder_) recorder_->record(session_id_, message.is_discarded() ? nullptr : &message, body);
  if (message.is_discarded()) {
    // nlohmann's parser also rejects invalid UTF-8 in strings.
    handler.on_malformed(ErrorCode::ParseError, "message is not valid JSON (or not valid UTF-8)");
    return;
  }
  handler.on_message(message);
}

void JsonTransport::disconnect(MessageHandler& handler) {
  if (decoder_.mid_message() && !handler.exited())
    spdlog::warn("session {}: client disconnected in the middle of a message", session_id_);
  handler.on_disconnect();
}

void JsonTransport::send(const nlohmann::json& message) {
  out_.write(encode_frame(message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

void JsonTransport::close() { out_.close(); }

}  // namespace ghostline::lsp
