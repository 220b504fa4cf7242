// Wraps a completer with a memory of the completions it made: a request that types through a
// completion just made is answered from memory (on the I/O thread through recall(), or on the
// engine thread when it was queued behind the work that made it), and after a completion the
// state of its acceptance is proposed for prefetch, so that accepting a line finds the next
// one ready. The wrapped completer's own follow-up (the context a deadline cut from a prompt)
// goes before it.
#pragma once

#include <atomic>
#include <memory>

#include "cache/completion_memory.h"
#include "lsp/completer.h"

namespace ghostline::daemon {

class MemoCompleter : public lsp::Completer {
 public:
  MemoCompleter(std::unique_ptr<lsp::Completer> inner, bool prefetch);

  lsp::CompletionResult complete(const lsp::CompletionRequest& request,
                                 const lsp::CancelToken& cancel) override;
  lsp::CompletionResult complete_answering_early(const lsp::CompletionRequest& request,
                                                 const lsp::CancelToken& cancel,
                                                 const AnswerEarly& answer_early) override;
  std::string describe() const override { return inner_->describe(); }
  std::string model_name() const override { return inner_->model_name(); }
  bool ready() const override { return inner_->ready(); }
  std::optional<lsp::CompletionResult> recall(const lsp::CompletionRequest& request) override;
  std::optional<lsp::CompletionRequest> follow_up(const lsp::CompletionRequest& request,
                                                  const lsp::CompletionResult& result) override;
  std::string counters_json() const override;
  void document_closed(const lsp::DocumentKey& key) override {
    memory_.forget(key);
    inner_->document_closed(key);
  }

  uint64_t inner_calls() const { return inner_calls_.load(); }

 private:
  std::unique_ptr<lsp::Completer> inner_;
  bool prefetch_;
  cache::CompletionMemory memory_;
  std::atomic<uint64_t> inner_calls_{0};
};

}  // namespace ghostline::daemon
