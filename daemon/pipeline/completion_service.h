// The completer behind the LSP server: the completion pipeline (completion_pipeline.h) over the
// local model (engine_generate.h) or an inference server (remote_completer.h).
#pragma once

#include <memory>
#include <string>

#include "daemon/pipeline/engine_options.h"
#include "lsp/completer.h"

namespace ghostline::daemon {

// Where the default model is looked for: $GHOSTLINE_MODEL_DIR when set; else, for an installed
// binary, PREFIX/share/ghostline/models; else models/ in the source tree it was built from.
std::string default_model_path();

// Loads the model and returns the completer. When no model file exists the completer says so
// (ready() is false) rather than pretending; a model that exists but cannot be loaded throws
// with the reason.
std::unique_ptr<lsp::Completer> make_completion_service(const EngineOptions& options);

}  // namespace ghostline::daemon
