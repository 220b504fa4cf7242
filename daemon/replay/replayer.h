// The replayer: drives the real daemon over an LSP connection with recorded typing sessions
// (tools/replay/FORMAT.md), with their original timing or as fast as the daemon answers, and
// fills a ReplayReport with what the person would have felt.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "daemon/replay/report.h"
#include "daemon/replay/typing_session.h"
#include "lsp/client_connection.h"
#include "lsp/protocol.h"
#include "lsp/text_document.h"

namespace ghostline::daemon {

struct ReplayOptions {
  // Timed: the recorded timing divided by `speed`. Step: each event once the requests before
  // it are answered (service time without queueing). Max: every event at once, as fast as the
  // connection takes them (the daemon supersedes and cancels what it cannot keep up with).
  enum class Pace { Timed, Step, Max } pace = Pace::Timed;
  double speed = 1.0;
  double request_timeout_s = 60;
  nlohmann::json settings = nlohmann::json::object();
  bool progress = true;
};

class Replayer {
 public:
  Replayer(lsp::ClientConnection& connection, ReplayReport& report, ReplayOptions options);

  void initialize(const std::string& encoding);

  void run(const Session& s, int index, int count);

  void shutdown();

 private:
  // Sends a request and handles messages until its response arrives.
  nlohmann::json call(const std::string& method, nlohmann::json params);

  // Handles one message; false on timeout or a closed connection.
  bool pump(Clock::time_point deadline);
  void pump_until(Clock::time_point deadline);

  void handle(const lsp::ClientConnection::Received& r);
  void on_completion_reply(size_t index, const nlohmann::json& message, Clock::time_point at);
  void on_stats(const nlohmann::json& result);
  void send_edit(std::vector<lsp::TextDocumentContentChangeEvent> changes,
                 Clock::time_point* sent_at);
  void send_completion(const Session& s, int event, bool invoked, Clock::time_point keystroke);
  size_t outstanding() const { return pending_.size(); }
  Clock::duration timeout() const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options_.request_timeout_s));
  }
  void show_progress(const Session& s, int index, int count, int event, bool force);

  lsp::ClientConnection& conn_;
  ReplayReport& report_;
  ReplayOptions options_;
  Clock::time_point start_;
  std::string encoding_name_;
  lsp::PositionEncoding encoding_ = lsp::PositionEncoding::Utf16;
  int64_t next_id_ = 1;
  std::unordered_map<int64_t, nlohmann::json> responses_;
  std::unordered_map<int64_t, size_t> pending_;  // completion request id -> report_.requests index
  std::vector<size_t> awaiting_stats_;           // answered, in reply order, not yet matched
  int64_t stats_poll_id_ = -1;

  // The session being replayed.
  int session_ = -1;
  std::unique_ptr<lsp::TextDocument> doc_;
  size_t cursor_ = 0;
  int64_t version_ = 1;
  uint64_t edits_sent_ = 0;
  int64_t newest_replied_ = 0;  // highest request id answered in this session
  std::unordered_map<int64_t, uint64_t> edits_at_request_;
  Clock::time_point last_progress_{};
};

}  // namespace ghostline::daemon
