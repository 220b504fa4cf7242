// A completer without a model, for protocol tests and for trying an editor set-up: it answers
// with a completion made from the text around the cursor, after a set number of 1 ms steps,
// checking cancellation at every step as the engine does. Selected only with
// `ghostline serve --scripted-completer STEPS`; it never stands in for a missing model.
#pragma once

#include <atomic>

#include "lsp/completer.h"

namespace ghostline::daemon {

class ScriptedCompleter : public lsp::Completer {
 public:
  explicit ScriptedCompleter(int steps) : steps_(steps) {}

  // The completion is "<word>" where word is the identifier before the cursor (or "empty"),
  // followed by the document version; it lets tests see which text a reply was made from.
  lsp::CompletionResult complete(const lsp::CompletionRequest& request,
                                 const lsp::CancelToken& cancel) override;
  std::string describe() const override;
  std::string model_name() const override { return "scripted"; }

  // Steps taken in total, including steps of requests that were then cancelled.
  uint64_t steps_taken() const { return steps_taken_.load(); }

 private:
  int steps_;
  std::atomic<uint64_t> steps_taken_{0};
};

}  // namespace ghostline::daemon
