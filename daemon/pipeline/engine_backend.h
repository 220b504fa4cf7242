// The engine backend a --backend choice runs on here.
#pragma once

#include <string>

#include "daemon/pipeline/engine_options.h"
#include "engine/backend/backend.h"

namespace ghostline::daemon {

// Auto stays Auto: engine::make_backend resolves it, to the GPU when it can run the model, else
// to the CPU. Without a usable GPU it says so once: in the log, or in *note when given (commands
// whose stdout is their output print it to stderr). `cuda` without one throws
// std::runtime_error with the reason (built without CUDA, no device).
engine::BackendKind engine_backend(BackendChoice choice, std::string* note = nullptr);

}  // namespace ghostline::daemon
