// Server-sent events (the `text/event-stream` format of the WHATWG HTML standard), parsed as the
// bytes arrive: a completion server streams one event per token, and the network cuts the
// stream wherever it likes, so a line, a field or a UTF-8 sequence may span two chunks.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace ghostline::daemon::remote {

struct SseEvent {
  std::string type = "message";  // the `event:` field, "message" when absent
  std::string data;              // the `data:` lines, joined by "\n"
  std::string id;
};

class SseParser {
 public:
  // Called for each complete event; returns false to stop parsing (the rest of the chunk is
  // ignored and feed() returns false).
  using OnEvent = std::function<bool(const SseEvent&)>;
  explicit SseParser(OnEvent on_event) : on_event_(std::move(on_event)) {}

  // Parses the next bytes of the stream. Returns false once the event handler asked to stop.
  bool feed(std::string_view bytes);
  // The stream ended: an event not closed by a blank line is dropped, as the standard says.
  void finish() {
    reset_event();
    line_.clear();
  }

  size_t events() const { return events_; }

 private:
  bool line(std::string_view line);
  void reset_event();

  OnEvent on_event_;
  std::string line_;       // the unfinished line of the previous chunk
  bool after_cr_ = false;  // the previous chunk ended with CR: a following LF ends nothing
  bool first_line_ = true;
  SseEvent event_;
  bool has_data_ = false;
  size_t events_ = 0;
};

}  // namespace ghostline::daemon::remote
