#include "daemon/replay/replayer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "lsp/json_rpc.h"
#include "lsp/protocol.h"

namespace ghostline::daemon {
namespace {

using nlohmann::json;

// Stats entries are matched to answers in batches of at most this many (the daemon keeps 64).
constexpr size_t kStatsBatch = 32;

}  // namespace

Replayer::Replayer(lsp::ClientConnection& connection, ReplayReport& report, ReplayOptions options)
    : conn_(connection), report_(report), options_(std::move(options)), start_(Clock::now()) {}

void Replayer::initialize(const std::string& encoding) {
  encoding_name_ = encoding;
  encoding_ = *lsp::parse_position_encoding(encoding);
  json params = {{"processId", ::getpid()},
                 {"clientInfo", {{"name", "ghostline-replay"}}},
                 {"capabilities", {{"general", {{"positionEncodings", {encoding}}}}}},
                 {"initializationOptions", options_.settings}};
  json reply = call("initialize", params);
  if (reply.contains("error"))
    throw std::runtime_error("initialize failed: " + reply["error"].dump());
  std::string negotiated =
      reply["result"]["capabilities"].value("positionEncoding", std::string("utf-16"));
  if (negotiated != encoding)
    throw std::runtime_error("the daemon chose position encoding " + negotiated +
                             ", the sessions use " + encoding);
  conn_.send(lsp::make_notification("initialized", json::object()));
}

void Replayer::shutdown() {
  // The daemon's own counters: work stopped by cancellation, answers from memory, prefetch.
  json stats = call("ghostline/stats", nullptr);
  if (stats.contains("result") && stats["result"].is_object()) {
    report_.settings["daemonScheduler"] = stats["result"].value("scheduler", json::object());
    report_.settings["daemonCompleter"] =
        stats["result"].value("completerCounters", json::object());
  }
  call("shutdown", nullptr);
  conn_.send(lsp::make_notification("exit", nullptr));
}

json Replayer::call(const std::string& method, json params) {
  int64_t id = next_id_++;
  json message = lsp::make_request(id, method, std::move(params));
  conn_.send(message);
  auto deadline = Clock::now() + timeout();
  while (!responses_.count(id)) {
    if (!pump(deadline))
      throw std::runtime_error(conn_.closed()
                                   ? "the daemon closed the connection during '" + method + "'"
                                   : "no response to '" + method + "' within the timeout");
  }
  json r = std::move(responses_[id]);
  responses_.erase(id);
  return r;
}

bool Replayer::pump(Clock::time_point deadline) {
  auto received = conn_.receive(deadline);
  if (!received) return false;
  handle(*received);
  return true;
}

void Replayer::pump_until(Clock::time_point deadline) {
  while (Clock::now() < deadline && pump(deadline)) {
  }
}

void Replayer::handle(const lsp::ClientConnection::Received& r) {
  const json& m = r.message;
  if (m.contains("method")) {
    std::string method = m["method"].get<std::string>();
    if (method == "window/logMessage" && session_ >= 0) {
      int type = m["params"].value("type", 4);
      auto& sr = report_.sessions[session_];
      if (type == 1) sr.daemon_errors.push_back(m["params"].value("message", std::string()));
      if (type == 2) ++sr.daemon_warnings;
    }
    return;
  }
  if (!m.contains("id") || !m["id"].is_number_integer()) return;
  int64_t id = m["id"].get<int64_t>();
  if (auto it = pending_.find(id); it != pending_.end()) {
    size_t index = it->second;
    pending_.erase(it);
    on_completion_reply(index, m, r.at);
    if (auto e = edits_at_request_.find(id); e != edits_at_request_.end()) {
      report_.requests[index].current = e->second == edits_sent_;
      edits_at_request_.erase(e);
    }
    if (report_.requests[index].result == RequestResult::Answered) {
      if (id < newest_replied_) ++report_.sessions[session_].stale_answers;
      newest_replied_ = std::max(newest_replied_, id);
      awaiting_stats_.push_back(index);
      if (awaiting_stats_.size() >= kStatsBatch && stats_poll_id_ < 0) {
        stats_poll_id_ = next_id_++;
        conn_.send(lsp::make_request(stats_poll_id_, "ghostline/stats", nullptr));
      }
    }
    return;
  }
  if (id == stats_poll_id_) {
    stats_poll_id_ = -1;
    if (m.contains("result")) on_stats(m["result"]);
    return;
  }
  responses_[id] = m;
}

void Replayer::on_completion_reply(size_t index, const json& m, Clock::time_point at) {
  RequestRecord& rec = report_.requests[index];
  rec.latency_ms = ms_between(start_, at) - rec.sent_ms;
  if (m.contains("result")) {
    rec.result = RequestResult::Answered;
    const json& items =
        m["result"].is_object() ? m["result"].value("items", json::array()) : json::array();
    if (!items.empty() && items[0].contains("insertText") && items[0]["insertText"].is_string())
      rec.insert_text = items[0]["insertText"].get<std::string>();
    return;
  }
  const json& error = m.value("error", json::object());
  int code = error.value("code", 0);
  std::string message = error.value("message", std::string());
  if (code != static_cast<int>(lsp::ErrorCode::RequestCancelled)) {
    rec.result = RequestResult::Failed;
    rec.insert_text = message;
  } else if (message.find("superseded") != std::string::npos) {
    rec.result = RequestResult::Superseded;
  } else if (message.find("changed") != std::string::npos) {
    rec.result = RequestResult::Invalidated;
  } else if (message.find("went away") != std::string::npos) {
    rec.result = RequestResult::Dropped;
  } else {
    rec.result = RequestResult::CancelledByClient;
  }
}

// The daemon's stats hold its most recent answers, in the order it sent them; those we received
// since the last poll are the last entries.
void Replayer::on_stats(const json& result) {
  const json& recent = result.value("recent", json::array());
  size_t n = std::min(recent.size(), awaiting_stats_.size());
  for (size_t k = 0; k < n; ++k)
    report_.requests[awaiting_stats_[awaiting_stats_.size() - n + k]].stats =
        recent[recent.size() - n + k];
  awaiting_stats_.clear();
}

void Replayer::send_edit(std::vector<lsp::TextDocumentContentChangeEvent> changes,
                         Clock::time_point* sent_at) {
  ++version_;
  ++edits_sent_;
  const lsp::DidChangeTextDocumentParams params{
      .text_document = {.uri = doc_->uri(), .version = version_},
      .content_changes = std::move(changes)};
  *sent_at = conn_.send(lsp::make_notification("textDocument/didChange", params));
}

void Replayer::send_completion(const Session& s, int event, bool invoked,
                               Clock::time_point keystroke) {
  int64_t id = next_id_++;
  lsp::InlineCompletionParams params{
      .text_document = {.uri = s.document.uri},
      .position = doc_->position_of(cursor_, encoding_),
      .trigger_kind = invoked ? lsp::InlineCompletionTriggerKind::Invoked
                              : lsp::InlineCompletionTriggerKind::Automatic,
      .selected = std::nullopt};
  const auto& e = s.events[event];
  if (e.kind == SessionEvent::Kind::Complete) params.position = e.position->get<lsp::Position>();
  RequestRecord rec;
  rec.session = session_;
  rec.event = event;
  rec.sent_ms = ms_between(start_, keystroke);
  report_.requests.push_back(rec);
  pending_[id] = report_.requests.size() - 1;
  edits_at_request_[id] = edits_sent_;
  ++report_.sessions[session_].requests;
  conn_.send(lsp::make_request(id, "textDocument/inlineCompletion", params));
}

void Replayer::show_progress(const Session& s, int index, int count, int event, bool force) {
  if (!options_.progress) return;
  // On a terminal one line is redrawn twice a second; in a log only each session's result.
  static const bool tty = ::isatty(STDERR_FILENO);
  if (!force && !tty) return;
  auto now = Clock::now();
  if (!force && now - last_progress_ < std::chrono::milliseconds(500)) return;
  last_progress_ = now;
  std::vector<double> lat;
  for (const auto& r : report_.requests)
    if (r.session == session_ && r.result == RequestResult::Answered) lat.push_back(r.latency_ms);
  auto p50 = percentile(lat, 50);
  std::string p50_text = p50 ? std::to_string(static_cast<int>(*p50 + 0.5)) + " ms" : "-";
  std::fprintf(stderr, "%s[%d/%d] %-24s %5d/%-5zu events  p50 %s     %s", tty ? "\r" : "",
               index + 1, count, s.name.c_str(), event, s.events.size(), p50_text.c_str(),
               force ? "\n" : "");
  std::fflush(stderr);
}

void Replayer::run(const Session& s, int index, int count) {
  if (s.position_encoding != encoding_name_)
    throw std::runtime_error(s.name + " uses position encoding " + s.position_encoding + ", not " +
                             encoding_name_);
  session_ = static_cast<int>(report_.sessions.size());
  report_.sessions.push_back({});
  SessionReport& sr = report_.sessions.back();
  sr.name = s.name;
  auto session_start = Clock::now();

  auto open = [&](const auto& f) {
    conn_.send(lsp::make_notification(
        "textDocument/didOpen",
        lsp::DidOpenTextDocumentParams{
            {.uri = f.uri, .language_id = f.language_id, .version = 1, .text = f.text}}));
  };
  for (const auto& f : s.open_files) open(f);
  doc_ = std::make_unique<lsp::TextDocument>(s.document.uri, s.document.language_id, 1,
                                             s.document.text);
  version_ = 1;
  newest_replied_ = 0;
  open(s.document);
  // Where the cursor starts: the typed region's start, else the end of the first edit.
  cursor_ = s.typed_start ? static_cast<size_t>(*s.typed_start) : 0;

  double shift_ms = s.events.empty() ? 0 : s.events.front().t_ms;  // session time skipped
  auto timeline_start = Clock::now();
  auto due = [&](const SessionEvent& e) {
    return timeline_start +
           std::chrono::duration_cast<Clock::duration>(
               std::chrono::duration<double, std::milli>((e.t_ms - shift_ms) / options_.speed));
  };
  // The request whose answer the person may see, and what they were about to type then.
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t shown_request = kNone;
  std::optional<int64_t> shown_progress;
  std::optional<std::string> shown_expect;
  bool shown_ignored = false;
  std::optional<int64_t> progress = s.typed_start ? std::optional<int64_t>(0) : std::nullopt;

  for (size_t i = 0; i < s.events.size();) {
    const SessionEvent& e = s.events[i];
    if (options_.pace == ReplayOptions::Pace::Step) {
      auto deadline = Clock::now() + timeout();
      while (outstanding() > 0 && pump(deadline)) {
      }
    } else if (options_.pace == ReplayOptions::Pace::Timed) {
      pump_until(due(e));
    } else {
      while (pump(Clock::now())) {
      }
    }
    if (conn_.closed()) throw std::runtime_error("the daemon closed the connection");
    show_progress(s, index, count, static_cast<int>(i), false);

    // Before the next key: does the person take the completion on screen?
    if (shown_request != kNone && e.kind != SessionEvent::Kind::Complete) {
      RequestRecord& rec = report_.requests[shown_request];
      if (rec.result == RequestResult::Answered && rec.current && !rec.insert_text.empty()) {
        ++sr.shown;
        std::string expected = shown_expect     ? *shown_expect
                               : shown_progress ? s.expected_after(*shown_progress)
                                                : std::string();
        if (!expected.empty() && expected.starts_with(rec.insert_text)) ++sr.would_accept;
        std::optional<AcceptedPart> take;
        if (!shown_ignored && shown_progress && !expected.empty())
          take = choose_acceptance(rec.insert_text, expected, s.accepts);
        if (take) {
          // Skip the recorded keys that typed what the completion inserts.
          int64_t target = *shown_progress + static_cast<int64_t>(take->text.size());
          std::optional<size_t> resume;
          for (size_t j = i; j < s.events.size(); ++j) {
            const auto& ej = s.events[j];
            if (ej.kind != SessionEvent::Kind::Key) break;
            if (ej.progress && *ej.progress > target) break;
            if (ej.progress && *ej.progress > *shown_progress) resume = j;
          }
          if (resume) {
            const auto& last = s.events[*resume];
            take->text.resize(static_cast<size_t>(*last.progress - *shown_progress));
            lsp::Position at = doc_->position_of(cursor_, encoding_);
            doc_->apply_change(lsp::Range{at, at}, take->text, encoding_);
            cursor_ += take->text.size();
            Clock::time_point sent;
            send_edit({{.range = lsp::Range{at, at}, .text = take->text}}, &sent);
            ++sr.keystrokes;
            if (take->kind == Acceptance::Full) ++sr.accepted_full;
            if (take->kind == Acceptance::Line) ++sr.accepted_line;
            if (take->kind == Acceptance::Word) ++sr.accepted_word;
            sr.keystrokes_saved += static_cast<int>(*resume - i);
            shift_ms += last.t_ms - e.t_ms;
            progress = last.progress;
            shown_request = kNone;
            if (last.complete) {
              send_completion(s, static_cast<int>(*resume), false, sent);
              shown_request = report_.requests.size() - 1;
              shown_progress = progress;
              shown_expect.reset();
              shown_ignored = last.ignore;
            }
            i = *resume + 1;
            continue;
          }
        }
      }
      shown_request = kNone;
    }

    Clock::time_point sent = Clock::now();
    if (e.kind == SessionEvent::Kind::Key) {
      lsp::Position end = doc_->position_of(cursor_, encoding_);
      std::string text;
      size_t begin = cursor_;
      if (e.key == "Backspace") {
        if (begin > 0) --begin;
        while (begin > 0 && (static_cast<unsigned char>(doc_->text()[begin]) & 0xC0) == 0x80)
          --begin;
      } else {
        text = e.key;
      }
      lsp::Position start = doc_->position_of(begin, encoding_);
      doc_->apply_change(lsp::Range{start, end}, text, encoding_);
      cursor_ = begin + text.size();
      send_edit({{.range = lsp::Range{start, end}, .text = text}}, &sent);
      ++sr.keystrokes;
    } else if (e.kind == SessionEvent::Kind::Edit) {
      auto changes = e.changes.get<std::vector<lsp::TextDocumentContentChangeEvent>>();
      for (const auto& change : changes) {
        size_t begin = 0;
        if (change.range) {
          auto b = doc_->offset_of(change.range->start, encoding_);
          if (!b)
            throw std::runtime_error(s.name + ": event " + std::to_string(i) +
                                     " edits outside the document");
          begin = *b;
        }
        if (!doc_->apply_change(change.range, change.text, encoding_))
          throw std::runtime_error(s.name + ": event " + std::to_string(i) +
                                   " edits outside the document");
        cursor_ = begin + change.text.size();
      }
      send_edit(std::move(changes), &sent);
      ++sr.keystrokes;
    }
    if (e.kind != SessionEvent::Kind::Complete) progress = e.progress;
    if (e.complete) {
      send_completion(s, static_cast<int>(i), e.invoked, sent);
      shown_request = report_.requests.size() - 1;
      shown_progress = progress;
      shown_expect = e.expect;
      shown_ignored = e.ignore;
    }
    ++i;
  }

  // Every request gets an answer or a cancellation; then read back the document.
  auto deadline = Clock::now() + timeout();
  while (outstanding() > 0 && pump(deadline)) {
  }
  if (shown_request != kNone) {
    const RequestRecord& rec = report_.requests[shown_request];
    if (rec.result == RequestResult::Answered && rec.current && !rec.insert_text.empty())
      ++sr.shown;
  }
  pending_.clear();
  edits_at_request_.clear();
  on_stats(call("ghostline/stats", nullptr).value("result", json::object()));
  json text = call("ghostline/documentText", lsp::TextDocumentParams{{.uri = s.document.uri}});
  sr.text_checked = true;
  std::string daemon_text =
      text.contains("result") ? text["result"].value("text", std::string()) : std::string();
  auto first_difference = [](const std::string& a, const std::string& b) {
    size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    return k;
  };
  if (!text.contains("result")) {
    sr.text_problem =
        "ghostline/documentText failed: " + text.value("error", json::object()).dump();
  } else if (daemon_text != doc_->text()) {
    sr.text_problem = "the daemon's text differs from the edits sent, from byte " +
                      std::to_string(first_difference(daemon_text, doc_->text()));
  } else if (s.final_text && daemon_text != *s.final_text) {
    sr.text_problem = "the daemon's text differs from the session's final text, from byte " +
                      std::to_string(first_difference(daemon_text, *s.final_text));
  }
  sr.text_matches = sr.text_problem.empty();
  conn_.send(lsp::make_notification("textDocument/didClose",
                                    lsp::TextDocumentParams{{.uri = s.document.uri}}));
  for (const auto& f : s.open_files)
    conn_.send(
        lsp::make_notification("textDocument/didClose", lsp::TextDocumentParams{{.uri = f.uri}}));
  sr.wall_ms = ms_between(session_start, Clock::now());
  show_progress(s, index, count, static_cast<int>(s.events.size()), true);
  session_ = -1;
}

}  // namespace ghostline::daemon
