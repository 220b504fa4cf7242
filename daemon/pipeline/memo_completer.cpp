#include "daemon/pipeline/memo_completer.h"

#include <nlohmann/json.hpp>

namespace ghostline::daemon {

MemoCompleter::MemoCompleter(std::unique_ptr<lsp::Completer> inner, bool prefetch)
    : inner_(std::move(inner)), prefetch_(prefetch) {}

std::optional<lsp::CompletionResult> MemoCompleter::recall(const lsp::CompletionRequest& request) {
  if (request.has_selected) return std::nullopt;
  auto recalled = memory_.recall(lsp::document_key_of(request), request.text, request.cursor);
  if (!recalled) return std::nullopt;
  lsp::CompletionResult result;
  result.insert_text = std::move(recalled->rest);
  result.replace_begin = result.replace_end = request.cursor;
  result.stats = {{"fromMemory", true}, {"typedThrough", recalled->typed}};
  return result;
}

lsp::CompletionResult MemoCompleter::complete(const lsp::CompletionRequest& request,
                                              const lsp::CancelToken& cancel) {
  return complete_answering_early(request, cancel, nullptr);
}

lsp::CompletionResult MemoCompleter::complete_answering_early(const lsp::CompletionRequest& request,
                                                              const lsp::CancelToken& cancel,
                                                              const AnswerEarly& answer_early) {
  if (request.context_only) return inner_->complete(request, cancel);  // nothing to show
  // Queued behind work that has meanwhile made what this request needs.
  if (auto result = recall(request)) return std::move(*result);
  ++inner_calls_;
  lsp::CompletionResult result =
      answer_early ? inner_->complete_answering_early(request, cancel, answer_early)
                   : inner_->complete(request, cancel);
  // A cancelled run may have stopped anywhere: only whole completions are remembered.
  if (!cancel.cancelled() && !request.has_selected && result.replace_begin == request.cursor &&
      result.replace_end == request.cursor)
    memory_.remember(lsp::document_key_of(request), request.text.share(), request.cursor,
                     result.insert_text);
  return result;
}

std::optional<lsp::CompletionRequest> MemoCompleter::follow_up(
    const lsp::CompletionRequest& request, const lsp::CompletionResult& result) {
  // The context a deadline cut from the prompt comes first: every later keystroke here gains
  // from it, while the state after accepting is used only if the user accepts.
  if (auto fill = inner_->follow_up(request, result)) return fill;
  if (!prefetch_ || result.insert_text.empty() || request.has_selected ||
      result.replace_begin != request.cursor || result.replace_end != request.cursor)
    return std::nullopt;
  // The document as it is once the user accepts the completion.
  lsp::CompletionRequest next = request;
  std::string accepted = request.text;
  accepted.insert(request.cursor, result.insert_text);
  next.text = std::move(accepted);
  next.cursor = request.cursor + result.insert_text.size();
  next.trigger = lsp::TriggerKind::Automatic;
  next.context_only = false;
  return next;
}

std::string MemoCompleter::counters_json() const {
  auto s = memory_.stats();
  nlohmann::json j{
      {"modelCalls", inner_calls_.load()},
      {"memory", {{"remembered", s.remembered}, {"recalls", s.recalls}, {"hits", s.hits}}}};
  // The wrapped completer's own counters (the remote backend's server, breaker and streams).
  if (auto inner = nlohmann::json::parse(inner_->counters_json(), nullptr, false);
      inner.is_object() && !inner.empty())
    j["backend"] = std::move(inner);
  return j.dump();
}

}  // namespace ghostline::daemon
