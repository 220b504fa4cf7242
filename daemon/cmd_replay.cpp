// `ghostline replay`: drives the real daemon over LSP with recorded typing sessions, with their
// original timing or as fast as the daemon answers, and reports latency as the person felt it.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "daemon/cli_args.h"
#include "daemon/lsp_connection.h"
#include "daemon/replay_report.h"
#include "daemon/replay_session.h"
#include "lsp/text_document.h"

namespace ghostline::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct ReplayOptions {
  // Timed: the recorded timing divided by `speed`. Step: each event once the requests before
  // it are answered (service time without queueing). Max: every event at once, as fast as the
  // connection takes them (the daemon supersedes and cancels what it cannot keep up with).
  enum class Pace { Timed, Step, Max } pace = Pace::Timed;
  double speed = 1.0;
  double request_timeout_s = 60;
  json settings = json::object();
  bool progress = true;
};

// Stats entries are matched to answers in batches of at most this many (the daemon keeps 64).
constexpr size_t kStatsBatch = 32;

json to_json(lsp::Position p) {
  return {{"line", p.line}, {"character", p.character}};
}

class Replayer {
 public:
  Replayer(LspConnection& connection, ReplayReport& report, ReplayOptions options)
      : conn_(connection), report_(report), options_(std::move(options)), start_(Clock::now()) {}

  void initialize(const std::string& encoding) {
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

  void run(const Session& s, int index, int count);

  void shutdown() {
    // The daemon's own counters: work stopped by cancellation, answers from memory, prefetch.
    json stats = call("ghostline/stats", nullptr);
    if (stats.contains("result") && stats["result"].is_object()) {
      report_.settings["daemonScheduler"] = stats["result"].value("scheduler", json::object());
      report_.settings["daemonCompleter"] = stats["result"].value("completerCounters", json::object());
    }
    call("shutdown", nullptr);
    conn_.send(lsp::make_notification("exit", nullptr));
  }

 private:
  // Sends a request and handles messages until its response arrives.
  json call(const std::string& method, json params) {
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

  // Handles one message; false on timeout or a closed connection.
  bool pump(Clock::time_point deadline) {
    auto received = conn_.receive(deadline);
    if (!received) return false;
    handle(*received);
    return true;
  }
  void pump_until(Clock::time_point deadline) {
    while (Clock::now() < deadline && pump(deadline)) {
    }
  }

  void handle(const LspConnection::Received& r);
  void on_completion_reply(size_t index, const json& message, Clock::time_point at);
  void on_stats(const json& result);
  void send_edit(json changes, Clock::time_point* sent_at);
  void send_completion(const Session& s, int event, bool invoked, Clock::time_point keystroke);
  size_t outstanding() const { return pending_.size(); }
  Clock::duration timeout() const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options_.request_timeout_s));
  }
  void show_progress(const Session& s, int index, int count, int event, bool force);

  LspConnection& conn_;
  ReplayReport& report_;
  ReplayOptions options_;
  Clock::time_point start_;
  std::string encoding_name_;
  lsp::PositionEncoding encoding_ = lsp::PositionEncoding::Utf16;
  int64_t next_id_ = 1;
  std::unordered_map<int64_t, json> responses_;
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

void Replayer::handle(const LspConnection::Received& r) {
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

void Replayer::send_edit(json changes, Clock::time_point* sent_at) {
  ++version_;
  ++edits_sent_;
  json params = {{"textDocument", {{"uri", doc_->uri()}, {"version", version_}}},
                 {"contentChanges", std::move(changes)}};
  *sent_at = conn_.send(lsp::make_notification("textDocument/didChange", std::move(params)));
}

void Replayer::send_completion(const Session& s, int event, bool invoked,
                               Clock::time_point keystroke) {
  int64_t id = next_id_++;
  json params = {{"textDocument", {{"uri", s.document.uri}}},
                 {"position", to_json(doc_->position_of(cursor_, encoding_))},
                 {"context", {{"triggerKind", invoked ? 1 : 2}}}};
  const auto& e = s.events[event];
  if (e.kind == SessionEvent::Kind::Complete) params["position"] = *e.position;
  RequestRecord rec;
  rec.session = session_;
  rec.event = event;
  rec.sent_ms = ms_between(start_, keystroke);
  report_.requests.push_back(rec);
  pending_[id] = report_.requests.size() - 1;
  edits_at_request_[id] = edits_sent_;
  ++report_.sessions[session_].requests;
  conn_.send(lsp::make_request(id, "textDocument/inlineCompletion", std::move(params)));
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

  for (const auto& f : s.open_files)
    conn_.send(lsp::make_notification(
        "textDocument/didOpen",
        {{"textDocument",
          {{"uri", f.uri}, {"languageId", f.language_id}, {"version", 1}, {"text", f.text}}}}));
  doc_ = std::make_unique<lsp::TextDocument>(s.document.uri, s.document.language_id, 1,
                                             s.document.text);
  version_ = 1;
  newest_replied_ = 0;
  conn_.send(
      lsp::make_notification("textDocument/didOpen", {{"textDocument",
                                                       {{"uri", s.document.uri},
                                                        {"languageId", s.document.language_id},
                                                        {"version", 1},
                                                        {"text", s.document.text}}}}));
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
            send_edit(json::array({{{"range", {{"start", to_json(at)}, {"end", to_json(at)}}},
                                    {"text", take->text}}}),
                      &sent);
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
      send_edit(json::array({{{"range", {{"start", to_json(start)}, {"end", to_json(end)}}},
                              {"text", text}}}),
                &sent);
      ++sr.keystrokes;
    } else if (e.kind == SessionEvent::Kind::Edit) {
      for (const auto& change : e.changes) {
        std::optional<lsp::Range> range;
        std::string text = change.at("text").get<std::string>();
        size_t begin = 0;
        if (change.contains("range")) {
          const json& r = change["range"];
          range = lsp::Range{
              {r["start"]["line"].get<int64_t>(), r["start"]["character"].get<int64_t>()},
              {r["end"]["line"].get<int64_t>(), r["end"]["character"].get<int64_t>()}};
          auto b = doc_->offset_of(range->start, encoding_);
          if (!b)
            throw std::runtime_error(s.name + ": event " + std::to_string(i) +
                                     " edits outside the document");
          begin = *b;
        }
        if (!doc_->apply_change(range, text, encoding_))
          throw std::runtime_error(s.name + ": event " + std::to_string(i) +
                                   " edits outside the document");
        cursor_ = begin + text.size();
      }
      send_edit(e.changes, &sent);
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
  json text = call("ghostline/documentText", {{"textDocument", {{"uri", s.document.uri}}}});
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
                                    {{"textDocument", {{"uri", s.document.uri}}}}));
  for (const auto& f : s.open_files)
    conn_.send(
        lsp::make_notification("textDocument/didClose", {{"textDocument", {{"uri", f.uri}}}}));
  sr.wall_ms = ms_between(session_start, Clock::now());
  show_progress(s, index, count, static_cast<int>(s.events.size()), true);
  session_ = -1;
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

int replay_main(std::span<char* const> args) {
  std::vector<std::string> paths;
  std::string speed_text = "1.0", daemon_cmd, connect, json_path, svg_path, model, daemon_log,
              serve_args, settings_text;
  int threads = 0;
  double timeout_s = 60;
  bool quiet = false;
  ArgParser p(
      "ghostline replay",
      "Replays recorded typing sessions (tools/replay/FORMAT.md) against the real daemon over\n"
      "LSP and reports keystroke-to-reply latency, pipeline stages, cancellations, prefill and\n"
      "cache reuse, and how many completions the person would have accepted. Without --daemon\n"
      "or --connect it starts `ghostline serve` itself.");
  p.rest("SESSION", "session files, or folders of *.jsonl session files", &paths);
  p.option("--speed", "X",
           "1.0: the recorded timing; 2: twice as fast; step: each keystroke once the previous "
           "request is answered; max: all keystrokes at once, the daemon cancels what it cannot "
           "keep up with",
           &speed_text);
  p.option("--daemon", "CMD", "shell command that starts a daemon speaking LSP on stdio",
           &daemon_cmd);
  p.option("--connect", "ADDR", "use a running daemon at unix:PATH or tcp:HOST:PORT", &connect);
  p.option("-m,--model", "FILE", "model for the daemon it starts (default: the daemon's default)",
           &model);
  p.option("-t,--threads", "N", "threads of the daemon it starts (0: all cores)", &threads);
  p.option("--daemon-log", "FILE", "log file of the daemon it starts (default: its stderr)",
           &daemon_log);
  p.option("--serve-args", "ARGS",
           "more options for the daemon it starts, e.g. \"--max-tokens 16\"", &serve_args);
  p.option("--settings", "JSON",
           "initializationOptions sent to the daemon, e.g. '{\"debounceMs\":0}'", &settings_text);
  p.option("--timeout", "SECONDS", "longest wait for any one reply", &timeout_s);
  p.option("--json", "FILE", "write the full report as JSON", &json_path);
  p.option("--svg", "FILE", "write a plot: latency over time and its CDF", &svg_path);
  p.flag("-q,--quiet", "no progress on stderr", &quiet);
  if (auto exit = p.parse(args)) return *exit;

  ReplayOptions options;
  options.request_timeout_s = timeout_s;
  options.progress = !quiet;
  if (speed_text == "max") {
    options.pace = ReplayOptions::Pace::Max;
  } else if (speed_text == "step") {
    options.pace = ReplayOptions::Pace::Step;
  } else {
    try {
      size_t used = 0;
      options.speed = std::stod(speed_text, &used);
      if (used != speed_text.size() || !(options.speed > 0)) throw std::invalid_argument("speed");
    } catch (const std::exception&) {
      std::fprintf(
          stderr,
          "ghostline replay: --speed must be a positive number, 'step' or 'max', not '%s'\n",
          speed_text.c_str());
      return 2;
    }
  }
  if (!settings_text.empty()) {
    options.settings = json::parse(settings_text, nullptr, false);
    if (!options.settings.is_object()) {
      std::fprintf(stderr, "ghostline replay: --settings must be a JSON object\n");
      return 2;
    }
  }
  if (!daemon_cmd.empty() && !connect.empty()) {
    std::fprintf(stderr, "ghostline replay: --daemon and --connect exclude each other\n");
    return 2;
  }
  if (paths.empty()) {
    std::fprintf(stderr, "ghostline replay: no session files given\n\n%s", p.help().c_str());
    return 2;
  }

  std::vector<Session> sessions;
  try {
    for (const auto& path : paths) {
      if (std::filesystem::is_directory(path)) {
        std::vector<std::string> files;
        for (const auto& entry : std::filesystem::directory_iterator(path))
          if (entry.path().extension() == ".jsonl") files.push_back(entry.path().string());
        std::sort(files.begin(), files.end());
        if (files.empty()) throw std::runtime_error("no *.jsonl session files in " + path);
        for (const auto& f : files) sessions.push_back(load_session(f));
      } else {
        sessions.push_back(load_session(path));
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline replay: %s\n", e.what());
    return 2;
  }

  std::signal(SIGPIPE, SIG_IGN);
  ReplayReport report;
  std::string daemon_description;
  std::unique_ptr<LspConnection> conn;
  try {
    if (!connect.empty()) {
      conn = LspConnection::connect(lsp::parse_listen_address(connect));
      daemon_description = connect;
    } else if (!daemon_cmd.empty()) {
      conn = LspConnection::spawn({"/bin/sh", "-c", "exec " + daemon_cmd});
      daemon_description = daemon_cmd;
    } else {
      std::vector<std::string> argv = {"/proc/self/exe", "serve"};
      if (!model.empty()) argv.insert(argv.end(), {"--model", model});
      if (threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(threads)});
      if (!daemon_log.empty()) argv.insert(argv.end(), {"--log-file", daemon_log});
      for (auto& w : split_words(serve_args)) argv.push_back(w);
      conn = LspConnection::spawn(argv);
      daemon_description = "ghostline serve";
      for (size_t k = 2; k < argv.size(); ++k) daemon_description += " " + argv[k];
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline replay: %s\n", e.what());
    return 1;
  }
  report.settings = {{"speed", options.pace == ReplayOptions::Pace::Timed ? json(options.speed)
                                                                          : json(speed_text)},
                     {"daemon", daemon_description},
                     {"initializationOptions", options.settings},
                     {"version", GHOSTLINE_VERSION}};

  int code = 0;
  Replayer replayer(*conn, report, options);
  try {
    replayer.initialize(sessions.front().position_encoding);
    for (size_t k = 0; k < sessions.size(); ++k)
      replayer.run(sessions[k], static_cast<int>(k), static_cast<int>(sessions.size()));
    replayer.shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nghostline replay: %s\n", e.what());
    code = 1;
  }
  int daemon_exit = conn->finish(std::chrono::milliseconds(5000));
  report.settings["daemonExitCode"] = daemon_exit;

  std::string table = format_table(report);
  std::fputs(table.c_str(), stdout);
  json j = to_json(report);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << j.dump(1) << "\n";
    if (!out) {
      std::fprintf(stderr, "ghostline replay: cannot write %s\n", json_path.c_str());
      code = 1;
    }
  }
  if (!svg_path.empty()) {
    std::ofstream out(svg_path);
    out << render_svg(report);
    if (!out) {
      std::fprintf(stderr, "ghostline replay: cannot write %s\n", svg_path.c_str());
      code = 1;
    }
  }
  if (code == 0 && !j["problems"].empty()) code = 1;
  return code;
}

}  // namespace ghostline::daemon
