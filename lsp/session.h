// One client's LSP session: lifecycle, documents, configuration and the method table. Runs on
// the I/O thread only; its transport hands it parsed messages and carries its messages out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "lsp/completer.h"
#include "lsp/completion_outcomes.h"
#include "lsp/completion_reply.h"
#include "lsp/document_store.h"
#include "lsp/json_rpc.h"
#include "lsp/protocol.h"
#include "lsp/rate_limiter.h"
#include "lsp/scheduler.h"
#include "lsp/text_document.h"
#include "lsp/transport.h"

namespace ghostline::lsp {

struct ServerOptions {
  size_t max_message_bytes = 16u << 20;
  // When set, a client's first message must be initialize carrying
  // initializationOptions.authToken equal to it; anything else closes the connection.
  std::string auth_token;
  // Per-session limits, each answered with an error that names the option that sets it.
  size_t max_documents = 1000;
  size_t max_document_bytes = 16u << 20;
  double max_requests_per_second = 0;  // <= 0: unlimited
  // Socket sessions: replies the client has not read, beyond which it is disconnected.
  size_t max_unread_reply_bytes = 64u << 20;
  Settings defaults;
  // What the editors report of the completions they showed. Copies of these options share it,
  // so every session of one server counts into one table.
  std::shared_ptr<CompletionOutcomes> outcomes = std::make_shared<CompletionOutcomes>();
  // What the daemon keeps of every session's documents (syntax trees), and each request's
  // context from it; null: requests are completed from their text alone. Not owned: it
  // outlives the server.
  DocumentContext* document_context = nullptr;
};

class Session final : public MessageHandler {
 public:
  Session(int id, MessageSink& out, Scheduler& scheduler, Completer& completer,
          const ServerOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // A message from the client, parsed; its envelope is checked here.
  void on_message(const nlohmann::json& message) override;
  // Bytes from the client that carried no message: answered with `code` and a null id.
  void on_malformed(ErrorCode code, const std::string& problem) override;
  // The client went away (EOF or error): cancels its work.
  void on_disconnect() override;

  bool exited() const override { return exited_; }
  // 0 after shutdown then exit, 1 for exit without shutdown or a lost connection.
  int exit_code() const { return exit_code_; }
  int id() const { return id_; }

 private:
  using RequestHandler = void (Session::*)(const nlohmann::json& id, const nlohmann::json& params);
  using NotificationHandler = void (Session::*)(const nlohmann::json& params);
  static const std::unordered_map<std::string_view, RequestHandler>& request_table();
  static const std::unordered_map<std::string_view, NotificationHandler>& notification_table();
  // Table entries: parse the params into the handler's type (InvalidParams if they do not fit).
  template <typename Params, void (Session::*Handler)(const nlohmann::json&, const Params&)>
  void request(const nlohmann::json& id, const nlohmann::json& params) {
    (this->*Handler)(id, params.get<Params>());
  }
  template <typename Params, void (Session::*Handler)(const Params&)>
  void notification(const nlohmann::json& params) {
    (this->*Handler)(params.get<Params>());
  }

  void dispatch_request(const nlohmann::json& id, const std::string& method,
                        const nlohmann::json& params);
  void dispatch_notification(const std::string& method, const nlohmann::json& params);
  // A message that is not a valid request or notification: answered with `code` and `id`
  // (null when the id itself is unusable); before authentication it also ends the connection.
  void invalid_message(const nlohmann::json& id, ErrorCode code, const std::string& message);
  bool awaiting_auth() const { return !options_.auth_token.empty() && !authenticated_; }
  void close_unauthenticated(const nlohmann::json& id, const std::string& why);

  // Requests.
  void on_initialize(const nlohmann::json& id, const InitializeParams& params);
  void on_shutdown(const nlohmann::json& id, const NoParams&);
  void on_inline_completion(const nlohmann::json& id, const InlineCompletionParams& params);
  void on_completion(const nlohmann::json& id, const TextDocumentPositionParams& params);
  void on_stats(const nlohmann::json& id, const NoParams&);
  void on_document_text(const nlohmann::json& id, const TextDocumentParams& params);
  // Notifications.
  void on_initialized(const NoParams&);
  void on_exit(const NoParams&);
  void on_cancel_request(const CancelParams& params);
  void on_set_trace(const SetTraceParams& params);
  void on_did_change_configuration(const DidChangeConfigurationParams& params);
  void on_did_open(const DidOpenTextDocumentParams& params);
  void on_did_change(const DidChangeTextDocumentParams& params);
  void on_did_save(const TextDocumentParams& params);
  void on_did_close(const TextDocumentParams& params);
  void on_completion_outcome(const CompletionOutcomeParams& params);

  void submit_completion(const nlohmann::json& id, const InlineCompletionParams& params,
                         CompletionStyle style);
  void reply_completion(const nlohmann::json& id, CompletionStyle style, const Outcome& outcome,
                        const std::shared_ptr<const TextDocument>& snapshot, size_t cursor,
                        std::chrono::steady_clock::time_point received);

  void reply(const nlohmann::json& id, nlohmann::json result);
  void reply_error(const nlohmann::json& id, ErrorCode code, std::string_view message);
  void notify(std::string_view method, nlohmann::json params);
  // window/logMessage (1 error, 2 warning, 3 info, 4 log) and the daemon's log.
  void log_to_client(int type, const std::string& message);
  void trace(std::string_view message, const nlohmann::json* verbose);
  void apply_settings(const SettingsChange& change);
  std::string document_key(const std::string& uri) const { return documents_.key(uri); }

  // What the session itself does as its documents change: the scheduler answers the
  // document's pending request (work the user is typing through is kept), and the completer
  // forgets a closed document.
  class DocumentEvents : public DocumentListener {
   public:
    explicit DocumentEvents(Session& session) : session_(session) {}
    void opened(const DocumentKey&, const TextDocument&) override {}
    void edited(const DocumentKey& key, const TextDocument& document,
                std::span<const DocumentEdit> edits) override;
    void closed(const DocumentKey& key) override;

   private:
    Session& session_;
  };

  int id_;
  MessageSink& out_;
  Scheduler& scheduler_;
  Completer& completer_;
  ServerOptions options_;
  Settings settings_;

  enum class State { Uninitialized, Running, ShutDown };
  State state_ = State::Uninitialized;
  bool exited_ = false;
  // False once the session is gone. The notification that a completion answered early has
  // grown arrives after its request was answered, so no disconnect cancels it: it checks this
  // (on the I/O thread, where the session is destroyed) before touching the session.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  int exit_code_ = 1;
  PositionEncoding encoding_ = PositionEncoding::Utf16;
  std::string trace_ = "off";
  bool warned_no_model_ = false;
  bool authenticated_ = false;
  RateLimiter request_rate_;

  DocumentStore documents_;
  DocumentEvents document_events_{*this};
  // Pending completion requests by JSON-RPC id (dumped), for $/cancelRequest.
  std::unordered_map<std::string, Scheduler::JobId> pending_;
};

}  // namespace ghostline::lsp
