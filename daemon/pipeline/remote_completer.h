// Completions from an inference server (vLLM, SGLang, TGI, llama.cpp's server): the daemon keeps
// every editor-side stage (context, prompt, post-processing, stop rules) and sends only the
// generation to the server, streamed, so that a stale request closes its stream and the server
// stops computing. A server that keeps failing opens a circuit breaker: requests then go to the
// local model when one is loaded, or are answered empty, until a cool-down has passed.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/pipeline/completion_pipeline.h"
#include "daemon/pipeline/engine_options.h"
#include "daemon/pipeline/prompt_assembler.h"
#include "daemon/remote/circuit_breaker.h"
#include "daemon/remote/http_client.h"
#include "lsp/completer.h"

namespace ghostline::engine {
class Tokenizer;
}

namespace ghostline::daemon {

// The pipeline's Generate stages on an inference server: the prompt laid out exactly as for the
// local model (the same template and segments, so that the server's own prefix cache hits as
// often as ours would), sent as one streamed request whose events go through the stop rules as
// they arrive. Throws remote::HttpError when the server fails.
class RemoteGenerate : public Generate {
 public:
  // `tokenizer_path`: a GGUF file with the model's vocabulary (weights not needed), for the FIM
  // template and prompt layout. Throws std::invalid_argument for a bad URL.
  RemoteGenerate(const EngineOptions& options, const std::string& tokenizer_path);
  ~RemoteGenerate() override;

  bool sees_suffix() const override;
  void prompt(PipelineRequest& q) override;
  Generated generate(PipelineRequest& q, syntax::StopRules& rules, const lsp::CancelToken& cancel,
                     const AnswerEarlyText& answer_early_text) override;
  std::string describe() const override;
  std::string model_name() const override;

  remote::HttpClient& http() { return *http_; }
  const remote::HttpClient& http() const { return *http_; }
  engine::FimMode fim_mode() const { return prompts_->mode(); }

 private:
  std::string request_body(const PipelineRequest& q) const;
  // The text of one streamed event, or nullopt when it ends the stream.
  std::optional<std::string> event_text(std::string_view data);

  EngineOptions options_;
  std::unique_ptr<engine::Tokenizer> tokenizer_;
  std::unique_ptr<PromptAssembler> prompts_;
  std::unique_ptr<remote::HttpClient> http_;
  std::string authorization_;       // "Bearer <key>", or empty
  std::string server_stop_reason_;  // the current request's finish reason, when the server gave one
};

// A server that keeps failing opens the circuit breaker; meanwhile the local model (`local`, may
// be null) answers through the same pipeline, or the request is answered empty.
class RemoteCompleter : public lsp::Completer {
 public:
  // Throws std::invalid_argument for a bad URL or a missing API key variable.
  RemoteCompleter(const EngineOptions& options, const std::string& tokenizer_path,
                  std::unique_ptr<Generate> local);
  ~RemoteCompleter() override;

  lsp::CompletionResult complete(const lsp::CompletionRequest& request,
                                 const lsp::CancelToken& cancel) override;
  std::string describe() const override;
  std::string model_name() const override;
  std::string counters_json() const override;
  void document_closed(const lsp::DocumentKey& key) override {
    if (local_) local_->forget(key);
  }

 private:
  lsp::CompletionResult after_failure(const lsp::CompletionRequest& request,
                                      const lsp::CancelToken& cancel, const std::string& why);
  lsp::CompletionResult answer_without_server(const lsp::CompletionRequest& request,
                                              const lsp::CancelToken& cancel,
                                              const std::string& why);
  void count_stream(const CompletionStats& stats);
  void note_failure(const std::string& why);
  void note_success();
  void copy_http_counters();  // under counters_mutex_

  EngineOptions options_;
  RemoteGenerate server_;
  std::unique_ptr<Generate> local_;
  remote::CircuitBreaker breaker_;
  bool outage_announced_ = false;  // the log said the server is skipped; cleared when it answers

  // Counters for `ghostline/stats`, read from the I/O thread.
  mutable std::mutex counters_mutex_;
  nlohmann::json counters_;
};

}  // namespace ghostline::daemon
