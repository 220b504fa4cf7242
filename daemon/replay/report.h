// What `ghostline replay` measured: one record per completion request, totals per session, and
// the three renderings (a table for people, JSON for machines, an SVG plot).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ghostline::daemon {

enum class RequestResult {
  Pending,
  Answered,
  Superseded,
  Invalidated,
  CancelledByClient,
  Dropped,
  Failed
};
std::string_view to_string(RequestResult r);

struct RequestRecord {
  int session = 0;     // index into ReplayReport::sessions
  int event = 0;       // index of the event that sent it
  double sent_ms = 0;  // keystroke time, since the replay started
  RequestResult result = RequestResult::Pending;
  double latency_ms = -1;   // keystroke to reply, for any reply
  std::string insert_text;  // the first item's text (Answered)
  bool current = false;     // no edit was sent between the request and its reply (shown)
  nlohmann::json stats;     // the daemon's ghostline/stats entry for it, when matched
};

struct SessionReport {
  std::string name;
  int keystrokes = 0;  // keys and edits sent (after acceptances skipped some)
  int requests = 0;
  int stale_answers = 0;  // an answer after an answer to a newer request of the document
  // What the person did with the completions they saw.
  int shown = 0;         // current answers with text
  int would_accept = 0;  // shown, and what they typed next starts with it
  int accepted_full = 0, accepted_line = 0, accepted_word = 0;
  int keystrokes_saved = 0;  // recorded keystrokes skipped thanks to acceptances
  bool text_checked = false, text_matches = false;
  std::string text_problem;
  std::vector<std::string> daemon_errors;  // window/logMessage errors
  int daemon_warnings = 0;
  double wall_ms = 0;
};

struct ReplayReport {
  nlohmann::json settings;  // speed, daemon, ...
  std::vector<SessionReport> sessions;
  std::vector<RequestRecord> requests;
};

// Requests of one session (or all with session < 0).
nlohmann::json to_json(const ReplayReport& report);
std::string format_table(const ReplayReport& report);
std::string render_svg(const ReplayReport& report);

// Nearest-rank percentile of unsorted values (p in [0, 100]); nullopt when empty.
std::optional<double> percentile(std::vector<double> values, double p);

}  // namespace ghostline::daemon
