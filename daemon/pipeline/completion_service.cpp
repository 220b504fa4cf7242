#include "daemon/pipeline/completion_service.h"

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "base/platform.h"
#include "daemon/pipeline/completion_pipeline.h"
#include "daemon/pipeline/engine_generate.h"
#include "daemon/pipeline/remote_completer.h"
#include "engine/gguf/gguf_file.h"

namespace ghostline::daemon {
namespace {

// Declares itself not ready: the server then answers with no items and tells the user why.
class NoModelCompleter : public lsp::Completer {
 public:
  explicit NoModelCompleter(std::string why) : why_(std::move(why)) {}
  lsp::CompletionResult complete(const lsp::CompletionRequest&, const lsp::CancelToken&) override {
    throw std::runtime_error(why_);
  }
  std::string describe() const override { return why_; }
  bool ready() const override { return false; }

 private:
  std::string why_;
};

// The pipeline over one Generate.
class PipelineCompleter : public lsp::Completer {
 public:
  PipelineCompleter(const EngineOptions& options, std::unique_ptr<Generate> generate)
      : options_(options), generate_(std::move(generate)) {}

  lsp::CompletionResult complete(const lsp::CompletionRequest& request,
                                 const lsp::CancelToken& cancel) override {
    return complete_answering_early(request, cancel, nullptr);
  }
  lsp::CompletionResult complete_answering_early(const lsp::CompletionRequest& request,
                                                 const lsp::CancelToken& cancel,
                                                 const AnswerEarly& answer_early) override {
    PipelineRequest q(request, options_.deadline_ms, options_.max_tokens);
    return run_pipeline(*generate_, q, cancel, answer_early);
  }
  // A prompt that lost context to the deadline is computed whole in idle time, so that the next
  // keystroke here finds that context cached and keeps it.
  std::optional<lsp::CompletionRequest> follow_up(const lsp::CompletionRequest& request,
                                                  const lsp::CompletionResult& result) override {
    if (request.context_only || options_.no_prefix_cache || !result.stats.contains("prefillBound"))
      return std::nullopt;
    lsp::CompletionRequest fill = request;
    fill.context_only = true;
    return fill;
  }
  std::string describe() const override { return generate_->describe(); }
  std::string model_name() const override { return generate_->model_name(); }
  void document_closed(const lsp::DocumentKey& key) override { generate_->forget(key); }

 private:

  EngineOptions options_;
  std::unique_ptr<Generate> generate_;
};

}  // namespace

std::string default_model_path() {
  constexpr const char* kFile = "ghostline-code.gguf";
  if (const char* env = std::getenv("GHOSTLINE_MODEL_DIR"))
    return (std::filesystem::path(env) / kFile).string();
  // An installed binary (cmake --install) has its models under PREFIX/share; one run from the
  // build tree has none there and takes the source tree's.
  std::error_code ec;
  const std::filesystem::path exe = platform::executable_path();
  if (!exe.empty()) {
    const auto installed =
        (exe.parent_path() / GHOSTLINE_INSTALLED_MODEL_DIR / kFile).lexically_normal();
    if (std::filesystem::exists(installed, ec)) return installed.string();
  }
  return (std::filesystem::path(GHOSTLINE_DEFAULT_MODEL_DIR) / kFile).string();
}

// --backend remote: the model file gives the tokenizer (a vocabulary-only file is enough); when
// it has weights too, it answers while the server is unreachable.
static std::unique_ptr<lsp::Completer> make_remote_completer(const EngineOptions& options,
                                                             const std::string& path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error(
        "--backend remote builds prompts with the model's tokenizer: '" + path +
        "' does not exist; pass --model FILE (a vocabulary-only GGUF is enough)");
  std::unique_ptr<Generate> local;
  if (!engine::GgufFile::open(path)->tensors().empty()) {
    // The fallback computes here, on the best local backend.
    EngineOptions here = options;
    here.backend = BackendChoice::Auto;
    local = std::make_unique<EngineGenerate>(here, path);
  }
  return std::make_unique<RemoteCompleter>(options, path, std::move(local));
}

std::unique_ptr<lsp::Completer> make_completion_service(const EngineOptions& options) {
  std::string path = options.model.empty() ? default_model_path() : options.model;
  if (options.backend == BackendChoice::Remote) return make_remote_completer(options, path);
  if (!std::filesystem::exists(path)) {
    if (!options.model.empty())
      throw std::runtime_error("model file '" + path + "' does not exist");
    return std::make_unique<NoModelCompleter>("no model: the default model " + path +
                                              " is not there; pass --model FILE");
  }
  return std::make_unique<PipelineCompleter>(options,
                                             std::make_unique<EngineGenerate>(options, path));
}

}  // namespace ghostline::daemon
