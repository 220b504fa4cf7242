#include "daemon/remote/sse_parser.h"

namespace ghostline::daemon::remote {

bool SseParser::feed(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    if (after_cr_) {
      after_cr_ = false;
      if (bytes[i] == '\n') {  // CRLF split across chunks
        ++i;
        continue;
      }
    }
    const size_t end = bytes.find_first_of("\r\n", i);
    if (end == std::string_view::npos) {
      line_.append(bytes.substr(i));
      break;
    }
    line_.append(bytes.substr(i, end - i));
    i = end + 1;
    if (bytes[end] == '\r') {
      if (i < bytes.size() && bytes[i] == '\n')
        ++i;
      else if (i == bytes.size())
        after_cr_ = true;
    }
    std::string complete;
    complete.swap(line_);
    if (!line(complete)) return false;
  }
  return true;
}

bool SseParser::line(std::string_view l) {
  if (first_line_) {
    first_line_ = false;
    if (l.starts_with("\xEF\xBB\xBF")) l.remove_prefix(3);  // a byte-order mark may open the stream
  }
  if (l.empty()) {  // a blank line dispatches the event
    if (!has_data_) {
      reset_event();
      return true;
    }
    ++events_;
    const bool go_on = on_event_(event_);
    reset_event();
    return go_on;
  }
  if (l.front() == ':') return true;  // a comment (servers send them as keep-alive pings)
  std::string_view field = l, value;
  if (const size_t colon = l.find(':'); colon != std::string_view::npos) {
    field = l.substr(0, colon);
    value = l.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) event_.data += '\n';
    event_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.type = value;
  } else if (field == "id") {
    event_.id = value;
  }
  return true;  // `retry` and unknown fields do not concern a completion stream
}

void SseParser::reset_event() {
  event_ = SseEvent{};
  has_data_ = false;
}

}  // namespace ghostline::daemon::remote
