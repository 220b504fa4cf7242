// The completion pipeline behind the LSP server: document text -> FIM prompt -> engine ->
// post-processed completion. Built from the command-line engine options.
#pragma once

#include <memory>
#include <string>

#include "daemon/cli_args.h"
#include "lsp/completer.h"

namespace ghostline::daemon {

struct EngineOptions {
  std::string model;       // GGUF file; empty: the default model shipped in models/
  int threads = 0;         // 0: all cores
  int max_tokens = 48;
  int deadline_ms = 80;
  int kv_mib = 256;
  bool no_prefix_cache = false;  // for benchmarks: compute every prompt from scratch
  // Proposal sources for speculative decoding: "auto" (n-gram lookup, and the draft model when
  // one is given), "ngram", "draft" or "off" (one target step per token; for benchmarks).
  std::string speculation = "auto";
  std::string draft = {};  // draft model for speculative decoding (same vocabulary); empty: none
};

void add_engine_options(ArgParser& parser, EngineOptions& options);

// Where the default model is looked for: models/ beside the source tree the binary was built
// from, or $GHOSTLINE_MODEL_DIR.
std::string default_model_path();

// Loads the model and returns the completer. When no model file exists the completer says so
// (ready() is false) rather than pretending; a model that exists but cannot be loaded throws
// with the reason.
std::unique_ptr<lsp::Completer> make_completion_service(const EngineOptions& options);

}  // namespace ghostline::daemon
