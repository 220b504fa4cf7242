#include "lsp/session.h"

#include <spdlog/spdlog.h>

#include "lsp/auth_token.h"
#include "lsp/stats_reply.h"
#include "base/utf8.h"

namespace ghostline::lsp {

using nlohmann::json;


Session::Session(int id, MessageSink& out, Scheduler& scheduler, Completer& completer,
                 const ServerOptions& options)
    : id_(id),
      out_(out),
      scheduler_(scheduler),
      completer_(completer),
      options_(options),
      settings_(options.defaults),
      request_rate_(options.max_requests_per_second),
      documents_(std::to_string(id) + "\n") {
  documents_.add_listener(document_events_);
  if (options_.document_context) documents_.add_listener(*options_.document_context);
}

void Session::DocumentEvents::edited(const DocumentKey& key, const TextDocument& document,
                                     std::span<const DocumentEdit> edits) {
  session_.scheduler_.document_edited(key, edits, document.text());
}

void Session::DocumentEvents::closed(const DocumentKey& key) {
  session_.completer_.document_closed(key);
}

Session::~Session() {
  *alive_ = false;
  on_disconnect();
}

const std::unordered_map<std::string_view, Session::RequestHandler>& Session::request_table() {
  static const std::unordered_map<std::string_view, RequestHandler> table = {
      {"initialize", &Session::request<InitializeParams, &Session::on_initialize>},
      {"shutdown", &Session::request<NoParams, &Session::on_shutdown>},
      {"textDocument/inlineCompletion",
       &Session::request<InlineCompletionParams, &Session::on_inline_completion>},
      {"textDocument/completion",
       &Session::request<TextDocumentPositionParams, &Session::on_completion>},
      {"ghostline/stats", &Session::request<NoParams, &Session::on_stats>},
      {"ghostline/documentText", &Session::request<TextDocumentParams, &Session::on_document_text>},
  };
  return table;
}

const std::unordered_map<std::string_view, Session::NotificationHandler>&
Session::notification_table() {
  static const std::unordered_map<std::string_view, NotificationHandler> table = {
      {"initialized", &Session::notification<NoParams, &Session::on_initialized>},
      {"exit", &Session::notification<NoParams, &Session::on_exit>},
      {"$/cancelRequest", &Session::notification<CancelParams, &Session::on_cancel_request>},
      {"$/setTrace", &Session::notification<SetTraceParams, &Session::on_set_trace>},
      {"workspace/didChangeConfiguration",
       &Session::notification<DidChangeConfigurationParams, &Session::on_did_change_configuration>},
      {"textDocument/didOpen",
       &Session::notification<DidOpenTextDocumentParams, &Session::on_did_open>},
      {"textDocument/didChange",
       &Session::notification<DidChangeTextDocumentParams, &Session::on_did_change>},
      {"textDocument/didSave", &Session::notification<TextDocumentParams, &Session::on_did_save>},
      {"textDocument/didClose", &Session::notification<TextDocumentParams, &Session::on_did_close>},
      {"ghostline/completionOutcome",
       &Session::notification<CompletionOutcomeParams, &Session::on_completion_outcome>},
  };
  return table;
}

namespace {

// Requests that the rate limit never refuses: a client must always be able to end its session.
bool exempt_from_rate_limit(const std::string& method) {
  return method == "initialize" || method == "shutdown";
}

}  // namespace

void Session::on_malformed(ErrorCode code, const std::string& problem) {
  invalid_message(nullptr, code, problem);
}

void Session::on_disconnect() {
  // Cancelling answers each request and erases it from pending_, so iterate a copy.
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, job] : pending) scheduler_.cancel(job, Scheduler::CancelReason::Dropped);
  documents_.clear();
  exited_ = true;
}

void Session::invalid_message(const json& id, ErrorCode code, const std::string& message) {
  spdlog::warn("session {}: {}", id_, message);
  if (awaiting_auth()) {
    close_unauthenticated(id, message);
    return;
  }
  reply_error(id, code, message);
}

void Session::close_unauthenticated(const json& id, const std::string& why) {
  spdlog::warn("session {}: closing a connection that did not authenticate ({})", id_, why);
  reply_error(id, ErrorCode::InvalidRequest,
              "authentication required: the first message must be initialize with "
              "initializationOptions.authToken (" + why + ")");
  exited_ = true;
  out_.close();
}

void Session::on_message(const json& message) {
  const Envelope envelope = read_envelope(message, /*accept_responses=*/!awaiting_auth());
  switch (envelope.kind) {
    case Envelope::Kind::Invalid:
      invalid_message(envelope.id, ErrorCode::InvalidRequest, envelope.problem);
      return;
    case Envelope::Kind::Response:
      // The server sends no requests, so there is nothing waiting for it.
      spdlog::debug("session {}: ignored a response to no request of ours", id_);
      return;
    case Envelope::Kind::Request:
    case Envelope::Kind::Notification:
      break;
  }
  const bool is_request = envelope.kind == Envelope::Kind::Request;
  const std::string& method = envelope.method;
  if (awaiting_auth() && !(is_request && method == "initialize")) {
    close_unauthenticated(envelope.id, "received '" + method + "'");
    return;
  }
  trace(is_request ? "received request '" + method + "'" : "received notification '" + method + "'",
        envelope.params);
  if (is_request) {
    dispatch_request(envelope.id, method, *envelope.params);
  } else {
    dispatch_notification(method, *envelope.params);
  }
}

void Session::dispatch_request(const json& id, const std::string& method, const json& params) {
  if (state_ == State::Uninitialized && method != "initialize") {
    reply_error(id, ErrorCode::ServerNotInitialized, "the server is not initialized yet");
    return;
  }
  if (state_ == State::ShutDown) {
    reply_error(id, ErrorCode::InvalidRequest, "the server is shut down; only 'exit' is accepted");
    return;
  }
  auto it = request_table().find(method);
  if (it == request_table().end()) {
    reply_error(id, ErrorCode::MethodNotFound, "unknown method '" + method + "'");
    return;
  }
  if (!exempt_from_rate_limit(method) && !request_rate_.admit(RateLimiter::Clock::now())) {
    spdlog::warn("session {}: '{}' refused by the rate limit", id_, method);
    reply_error(id, ErrorCode::RequestFailed,
                "more than " + json(request_rate_.per_second()).dump() +
                    " requests per second (--max-requests-per-second); '" + method + "' refused");
    return;
  }
  try {
    (this->*(it->second))(id, params);
  } catch (const InvalidParams& e) {
    reply_error(id, ErrorCode::InvalidParams, method + ": " + e.message);
  } catch (const json::exception& e) {
    reply_error(id, ErrorCode::InvalidParams, method + ": " + e.what());
  } catch (const std::exception& e) {
    spdlog::error("session {}: {} failed: {}", id_, method, e.what());
    reply_error(id, ErrorCode::InternalError, method + " failed: " + e.what());
  }
  // initialize with bad params never reached the token check.
  if (awaiting_auth() && !exited_) close_unauthenticated(id, "initialize was not accepted");
}

void Session::dispatch_notification(const std::string& method, const json& params) {
  if (state_ == State::Uninitialized && method != "exit") {
    spdlog::warn("session {}: dropped notification '{}' before initialize", id_, method);
    return;
  }
  auto it = notification_table().find(method);
  if (it == notification_table().end()) {
    if (method.rfind("$/", 0) != 0)
      spdlog::debug("session {}: ignored notification '{}'", id_, method);
    return;
  }
  try {
    (this->*(it->second))(params);
  } catch (const InvalidParams& e) {
    log_to_client(1, method + ": " + e.message);
  } catch (const json::exception& e) {
    log_to_client(1, method + ": " + e.what());
  } catch (const std::exception& e) {
    log_to_client(1, method + " failed: " + e.what());
  }
}

void Session::reply(const json& id, json result) {
  out_.send(make_response(id, std::move(result)));
}

void Session::reply_error(const json& id, ErrorCode code, std::string_view message) {
  out_.send(make_error(id, code, message));
}

void Session::notify(std::string_view method, json params) {
  out_.send(make_notification(method, std::move(params)));
}

void Session::log_to_client(int type, const std::string& message) {
  if (type == 1) {
    spdlog::error("session {}: {}", id_, message);
  } else if (type == 2) {
    spdlog::warn("session {}: {}", id_, message);
  } else {
    spdlog::info("session {}: {}", id_, message);
  }
  notify("window/logMessage", LogMessageParams{.type = type, .message = "ghostline: " + message});
}

void Session::trace(std::string_view message, const json* verbose) {
  if (trace_ == "off") return;
  json params = {{"message", message}};
  if (trace_ == "verbose" && verbose) params["verbose"] = verbose->dump();
  notify("$/logTrace", std::move(params));
}


// ---- lifecycle ----

void Session::on_initialize(const json& id, const InitializeParams& params) {
  if (state_ != State::Uninitialized) {
    reply_error(id, ErrorCode::InvalidRequest, "initialize was already received");
    return;
  }
  if (awaiting_auth()) {
    if (!params.auth_token || !tokens_equal(*params.auth_token, options_.auth_token)) {
      close_unauthenticated(id, "initializationOptions.authToken is missing or wrong");
      return;
    }
    authenticated_ = true;
    spdlog::info("session {}: authenticated", id_);
  }
  // Position encoding: the client's most preferred one that we support; UTF-16 by default.
  encoding_ = PositionEncoding::Utf16;
  for (const auto& name : params.position_encodings) {
    if (auto parsed = parse_position_encoding(name)) {
      encoding_ = *parsed;
      break;
    }
  }
  if (params.trace) trace_ = *params.trace;
  apply_settings(params.settings);
  state_ = State::Running;
  ServerCapabilities capabilities;
  capabilities.position_encoding = encoding_;
  reply(id, InitializeResult{
                .capabilities = capabilities,
                .server_info = {.name = "ghostline", .version = GHOSTLINE_VERSION_STRING}});
  spdlog::info("session {}: initialized (position encoding {}, completer: {})", id_,
               to_string(encoding_), completer_.describe());
}

void Session::on_initialized(const NoParams&) {
  if (!completer_.ready()) {
    log_to_client(2,
                  "no model is loaded, so no completions will be shown: " + completer_.describe());
    warned_no_model_ = true;
  }
}

void Session::on_shutdown(const json& id, const NoParams&) {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [rid, job] : pending) scheduler_.cancel(job, Scheduler::CancelReason::Dropped);
  state_ = State::ShutDown;
  reply(id, nullptr);
}

void Session::on_exit(const NoParams&) {
  exit_code_ = state_ == State::ShutDown ? 0 : 1;
  on_disconnect();
  out_.close();
}

void Session::on_set_trace(const SetTraceParams& params) { trace_ = params.value; }

void Session::apply_settings(const SettingsChange& change) {
  for (const SettingsProblem& problem : change.problems)
    log_to_client(problem.type, problem.message);
  change.apply_to(settings_);
}

void Session::on_did_change_configuration(const DidChangeConfigurationParams& params) {
  apply_settings(params.settings);
}

// ---- documents ----

void Session::on_did_open(const DidOpenTextDocumentParams& params) {
  const TextDocumentItem& doc = params.text_document;
  if (doc.text.size() > options_.max_document_bytes) {
    log_to_client(1, "didOpen of " + doc.uri + " refused: its " + std::to_string(doc.text.size()) +
                         " bytes exceed the limit of " +
                         std::to_string(options_.max_document_bytes) +
                         " bytes (--max-document-mib); it gets no completions");
    return;
  }
  if (!documents_.find(doc.uri) && documents_.size() >= options_.max_documents) {
    log_to_client(
        1,
        "didOpen of " + doc.uri + " refused: " + std::to_string(options_.max_documents) +
            " documents are open, the limit (--max-documents); close some to complete in others");
    return;
  }
  if (!documents_.open(doc.uri, doc.language_id, doc.version, doc.text))
    spdlog::warn("session {}: didOpen of an open document {}; replaced", id_, doc.uri);
}

void Session::on_did_change(const DidChangeTextDocumentParams& params) {
  const std::string& uri = params.text_document.uri;
  Range bad;
  switch (documents_.change(uri, params.text_document.version, params.content_changes, encoding_,
                            &bad)) {
    case DocumentStore::ChangeResult::Applied:
      // The store told the scheduler (see the constructor). An edit cannot be refused before
      // it is applied (its result's size is known only then): a document grown past the limit
      // is closed instead.
      if (size_t size = documents_.find(uri)->text().size(); size > options_.max_document_bytes) {
        scheduler_.cancel_document(document_key(uri), Scheduler::CancelReason::Edited);
        documents_.close(uri);
        log_to_client(
            1, "didChange made " + uri + " " + std::to_string(size) + " bytes, over the limit of " +
                   std::to_string(options_.max_document_bytes) +
                   " bytes (--max-document-mib); the document was closed and gets no completions");
      }
      break;
    case DocumentStore::ChangeResult::NotOpen:
      log_to_client(1, "didChange for " + uri + ", which is not open; change ignored");
      break;
    case DocumentStore::ChangeResult::OutOfRange:
      log_to_client(1, "didChange for " + uri + " has a range outside the document (" +
                           json(bad).dump() + ", " +
                           std::to_string(documents_.find(uri)->line_count()) +
                           " lines); the whole change was ignored. Reopen the file to resync.");
      scheduler_.cancel_document(document_key(uri), Scheduler::CancelReason::Edited);
      break;
  }
}

void Session::on_did_save(const TextDocumentParams& params) {
  const std::string& uri = params.text_document.uri;
  if (!documents_.find(uri)) log_to_client(2, "didSave for " + uri + ", which is not open");
}

void Session::on_did_close(const TextDocumentParams& params) {
  const std::string& uri = params.text_document.uri;
  scheduler_.cancel_document(document_key(uri), Scheduler::CancelReason::Edited);
  if (!documents_.close(uri)) log_to_client(2, "didClose for " + uri + ", which is not open");
}

// ---- completion ----

void Session::on_inline_completion(const json& id, const InlineCompletionParams& params) {
  submit_completion(id, params, CompletionStyle::Inline);
}

void Session::on_completion(const json& id, const TextDocumentPositionParams& params) {
  submit_completion(id,
                    {.text_document = params.text_document,
                     .position = params.position,
                     .trigger_kind = InlineCompletionTriggerKind::Invoked,
                     .selected = std::nullopt},
                    CompletionStyle::List);
}

void Session::submit_completion(const json& id, const InlineCompletionParams& params,
                                CompletionStyle style) {
  const std::string& uri = params.text_document.uri;
  std::shared_ptr<const TextDocument> snapshot = documents_.find(uri);
  if (!snapshot) {
    reply_error(id, ErrorCode::InvalidParams,
                "document " + uri + " is not open (send didOpen first)");
    return;
  }
  auto cursor = snapshot->offset_of(params.position, encoding_);
  if (!cursor) {
    reply_error(id, ErrorCode::InvalidParams,
                "position " + json(params.position).dump() + " is outside the document (" +
                    std::to_string(snapshot->line_count()) + " lines)");
    return;
  }
  auto empty = [&] { reply(id, empty_completion_reply(style)); };
  // A language switched off costs no model time.
  if (!settings_.enabled || !settings_.language_enabled(snapshot->language_id())) return empty();
  if (!completer_.ready()) {
    if (!warned_no_model_) {
      log_to_client(
          2, "no model is loaded, so no completions will be shown: " + completer_.describe());
      warned_no_model_ = true;
    }
    return empty();
  }

  CompletionRequest request;
  request.uri = uri;
  request.language_id = snapshot->language_id();
  request.version = snapshot->version();
  // The version the store holds, shared: the store copies it before changing it while a
  // request holds it.
  request.text = SharedText(std::shared_ptr<const std::string>(snapshot, &snapshot->text()));
  request.cursor = *cursor;
  request.max_tokens = settings_.max_tokens;
  request.deadline_ms = settings_.deadline_ms;
  request.mode = settings_.completion;
  if (params.trigger_kind == InlineCompletionTriggerKind::Invoked)
    request.trigger = TriggerKind::Invoked;
  if (params.selected) {
    auto b = snapshot->offset_of(params.selected->range.start, encoding_);
    auto e = snapshot->offset_of(params.selected->range.end, encoding_);
    if (!b || !e || *e < *b)
      throw InvalidParams{"selectedCompletionInfo.range is outside the document"};
    request.has_selected = true;
    request.selected_begin = *b;
    request.selected_end = *e;
    request.selected_text = params.selected->text;
  }
  request.document_key = document_key(uri);
  if (options_.document_context) request.context = options_.document_context->context_for(request);

  std::string key = id.dump();
  if (pending_.count(key)) {
    reply_error(id, ErrorCode::InvalidRequest, "a request with id " + key + " is already pending");
    return;
  }
  size_t cursor_offset = *cursor;
  const auto received = std::chrono::steady_clock::now();
  pending_[key] = 0;
  auto job = scheduler_.submit(
      document_key(uri), std::move(request),
      [this, id, key, style, snapshot, cursor_offset, received](Outcome outcome) {
        pending_.erase(key);
        reply_completion(id, style, outcome, snapshot, cursor_offset, received);
      },
      std::chrono::milliseconds(settings_.debounce_ms),
      // Only inline completions grow: the notification asks the client to request again.
      style == CompletionStyle::Inline
          ? Scheduler::Updated([this, alive = alive_, snapshot, cursor_offset] {
              if (!*alive || exited_) return;
              notify("ghostline/completionUpdated",
                     completion_updated_params(*snapshot, cursor_offset, encoding_));
            })
          : Scheduler::Updated());
  // The job may have been answered synchronously (scheduler stopping); then it is gone.
  if (auto p = pending_.find(key); p != pending_.end()) p->second = job;
}

void Session::reply_completion(const json& id, CompletionStyle style, const Outcome& outcome,
                               const std::shared_ptr<const TextDocument>& snapshot, size_t cursor,
                               std::chrono::steady_clock::time_point received) {
  if (exited_) return;
  if (outcome.kind == Outcome::Kind::Cancelled) {
    reply_error(id, ErrorCode::RequestCancelled, outcome.error);
    return;
  }
  if (outcome.kind == Outcome::Kind::Failed) {
    spdlog::error("session {}: completion failed: {}", id_, outcome.error);
    reply_error(id, ErrorCode::RequestFailed, "completion failed: " + outcome.error);
    return;
  }
  const CompletionResult& r = outcome.result;
  spdlog::debug("session {}: completion of {} bytes (queue {:.1f} ms, model {:.1f} ms)", id_,
                r.insert_text.size(), outcome.queue_ms, outcome.complete_ms);
  if (r.insert_text.empty()) {
    reply(id, empty_completion_reply(style));
    return;
  }
  if (style == CompletionStyle::List) {
    reply(id, completion_list_reply(r, *snapshot, cursor, encoding_));
    return;
  }
  // The id lets the editor's plugin report what became of this completion.
  const auto latency = std::chrono::steady_clock::now() - received;
  const uint64_t completion_id = options_.outcomes->issue(
      {.language = snapshot->language_id(),
       .model = completer_.model_name(),
       .chars = utf8_code_points(r.insert_text),
       .latency_ms = std::chrono::duration<double, std::milli>(latency).count()});
  reply(id, inline_completion_reply(r, *snapshot, cursor, encoding_, completion_id));
}

void Session::on_cancel_request(const CancelParams& params) {
  auto it = pending_.find(params.id.dump());
  if (it == pending_.end()) return;  // already answered: nothing to do
  scheduler_.cancel(it->second, Scheduler::CancelReason::Client);
}

void Session::on_completion_outcome(const CompletionOutcomeParams& params) {
  const auto fate = parse_completion_fate(params.outcome);
  if (!fate) {
    log_to_client(2, "ghostline/completionOutcome: unknown outcome '" + params.outcome +
                         "' (accepted, acceptedPartially, dismissed or typedOver); ignored");
    return;
  }
  if (!options_.outcomes->report(params.id, *fate, params.accepted_chars))
    spdlog::debug("session {}: outcome for completion {}, which is unknown or forgotten", id_,
                  params.id);
}

void Session::on_stats(const json& id, const NoParams&) {
  auto counters = json::parse(completer_.counters_json(), nullptr, false);
  reply(id, StatsResult{.completer = completer_.describe(),
                        .completer_counters = counters.is_object() ? counters : json::object(),
                        .model = completer_.model_name(),
                        .outcomes = options_.outcomes->to_json(),
                        .recent = scheduler_.recent_stats(),
                        .scheduler = scheduler_.counters(),
                        .documents = documents_.size(),
                        .position_encoding = encoding_});
}

// The daemon's copy of an open document, so that a client (the replay harness, a test) can
// check that its edits were applied as it meant them.
void Session::on_document_text(const json& id, const TextDocumentParams& params) {
  const std::string& uri = params.text_document.uri;
  auto doc = documents_.find(uri);
  if (!doc) {
    reply_error(id, ErrorCode::InvalidParams, "document " + uri + " is not open");
    return;
  }
  reply(id, DocumentTextResult{.uri = uri, .version = doc->version(), .text = doc->text()});
}

}  // namespace ghostline::lsp
