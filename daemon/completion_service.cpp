#include "daemon/completion_service.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

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

}  // namespace

void add_engine_options(ArgParser& p, EngineOptions& o) {
  p.option("-m,--model", "FILE", "GGUF model to complete with (default: " + default_model_path() + ")", &o.model);
  p.option("--draft", "FILE", "smaller GGUF model with the same vocabulary, for speculative decoding", &o.draft);
  p.option("-t,--threads", "N", "compute threads (0: all cores)", &o.threads);
}

std::string default_model_path() {
  std::filesystem::path dir = GHOSTLINE_DEFAULT_MODEL_DIR;
  if (const char* env = std::getenv("GHOSTLINE_MODEL_DIR")) dir = env;
  return (dir / "ghostline-code.gguf").string();
}

std::unique_ptr<lsp::Completer> make_completion_service(const EngineOptions& options) {
  std::string path = options.model.empty() ? default_model_path() : options.model;
  if (!std::filesystem::exists(path)) {
    if (!options.model.empty()) throw std::runtime_error("model file '" + path + "' does not exist");
    return std::make_unique<NoModelCompleter>("no model: the default model " + path +
                                              " is not there; pass --model FILE");
  }
  throw std::runtime_error("cannot load '" + path + "': this build has no inference engine yet");
}

}  // namespace ghostline::daemon
