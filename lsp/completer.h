// The port through which the LSP server asks for completions. The daemon implements it with
// the engine; tests implement it with doubles.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lsp/cancel_token.h"
#include "lsp/document_store.h"
#include "lsp/shared_text.h"

namespace ghostline::lsp {

enum class TriggerKind { Invoked = 1, Automatic = 2 };

// The `completion` setting: how many lines a completion may have. Auto: what the syntax decides;
// Line: never more than one; Block: several wherever the cursor may start a block or continue
// a line of code (not inside comments and strings).
enum class CompletionMode { Auto, Line, Block };

// What a request takes from the I/O thread's document state as it is submitted (the syntax tree
// of its document's version, context from other documents), for the engine thread. Defined by
// the DocumentContext that makes it (the daemon's syntax state); opaque here. Immutable.
struct RequestContext;

struct CompletionRequest {
  std::string uri;
  DocumentKey document_key;  // empty for a request outside a session: the uri stands for it
  std::string language_id;
  int64_t version = 0;
  SharedText text;           // the document at the time of the request (shared, not copied)
  size_t cursor = 0;         // byte offset of the cursor in text
  TriggerKind trigger = TriggerKind::Automatic;
  int max_tokens = 0;        // 0: the completer's default
  int deadline_ms = 0;       // 0: the completer's default
  CompletionMode mode = CompletionMode::Auto;
  // The item selected in the editor's completion widget, if any: the completion must start
  // by replacing [selected_begin, selected_end) with selected_text.
  bool has_selected = false;
  size_t selected_begin = 0, selected_end = 0;
  std::string selected_text;
  // Idle work with nothing to show (made by Completer::follow_up): the completer computes the
  // context that a deadline cut from this request's prompt into its cache, so that the next
  // request at this place finds it there. Any real request preempts it.
  bool context_only = false;
  // Set by the server's DocumentContext on the I/O thread; may be null (then the completer
  // works from the text alone). Requests derived from this one (prefetch) keep it: check that
  // it is for this version and text.
  std::shared_ptr<const RequestContext> context;
};

struct CompletionResult {
  std::string insert_text;   // text inserted at the cursor (empty: nothing to show)
  // Replacement range in bytes of the request's text; equal to the cursor for a plain insert.
  size_t replace_begin = 0, replace_end = 0;
  // Per-request statistics (a JSON object), made once by the completer and passed along as is.
  nlohmann::json stats = nlohmann::json::object();
  // Model forward steps (prefill chunks, decode and verification steps, draft steps) that
  // finished after the request's token was cancelled: work wasted on a stale request.
  int steps_after_cancel = 0;
};

class Completer {
 public:
  virtual ~Completer() = default;
  // Runs on the engine thread. Must check `cancel` between steps and return promptly once it
  // is set (whatever it returns then is discarded).
  virtual CompletionResult complete(const CompletionRequest& request,
                                    const CancelToken& cancel) = 0;
  // Runs on the engine thread, as complete(), but may call `answer_early` (at most once, on the
  // engine thread) with what is ready when the reply is due: the request is answered with it
  // while the work goes on, and a final result that shows more is announced to the client.
  using AnswerEarly = std::function<void(const CompletionResult& partial)>;
  virtual CompletionResult complete_answering_early(const CompletionRequest& request,
                                                    const CancelToken& cancel,
                                                    const AnswerEarly& answer_early) {
    return complete(request, cancel);
  }
  // A short description for logs and `ghostline/stats` (e.g. the model file).
  virtual std::string describe() const = 0;
  // The model's short name (its file's name), for the per-model acceptance counts.
  virtual std::string model_name() const { return describe(); }
  // Whether this completer can produce completions at all (false: no model loaded).
  virtual bool ready() const { return true; }
  // Runs on the I/O thread, so it must be thread-safe and cheap: a completion for `request`
  // that needs no model (the user typed the start of a completion made a moment ago), or
  // nothing.
  virtual std::optional<CompletionResult> recall(const CompletionRequest&) { return std::nullopt; }
  // Runs on the engine thread when it would otherwise be idle after `request` completed with
  // `result`: a request the user is likely to make next (the state after accepting the
  // completion), computed in idle time so that its answer is ready, or the request again with
  // context_only set (its prompt lost context to the deadline). Its result goes to no client;
  // the completer keeps it to answer recall().
  virtual std::optional<CompletionRequest> follow_up(const CompletionRequest&,
                                                     const CompletionResult&) {
    return std::nullopt;
  }
  // A session closed the document: the completer forgets what it kept of it (I/O thread;
  // thread-safe and cheap).
  virtual void document_closed(const DocumentKey& key) {}
  // The completer's own counters as a serialized JSON object, for `ghostline/stats` (engine
  // thread and I/O thread: must be thread-safe).
  virtual std::string counters_json() const { return "{}"; }
};

// The key of the request's document state.
inline const DocumentKey& document_key_of(const CompletionRequest& request) {
  return request.document_key.empty() ? request.uri : request.document_key;
}

// What the daemon keeps of the open documents beside their text (syntax trees, what the other
// documents offer a prompt): a listener of every session's documents that gives each request
// its context as the request is submitted. I/O thread only.
class DocumentContext : public DocumentListener {
 public:
  // `request` has its document_key set.
  virtual std::shared_ptr<const RequestContext> context_for(const CompletionRequest& request) = 0;
};

// If `text` is `before.text` with a string inserted at `before.cursor` (the user typed at the
// cursor), that string (possibly empty: the same text).
std::optional<std::string_view> typed_at_cursor(const CompletionRequest& before,
                                                std::string_view text);

// Whether `after` is `before` with something typed at the cursor and the cursor after it: the
// work for `before` is still useful for `after`.
bool continues(const CompletionRequest& before, const CompletionRequest& after);

}  // namespace ghostline::lsp
