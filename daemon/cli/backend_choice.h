// --backend for the commands that do not take the whole set of engine options (bench,
// generate, logits); serve and complete get it from engine_flags.h.
#pragma once

#include "daemon/cli/arg_parser.h"
#include "daemon/pipeline/engine_options.h"
#include "engine/backend/backend.h"

namespace ghostline::daemon {

void add_backend_option(ArgParser& parser, BackendChoice& choice);

// engine_backend() for a command: the note that auto falls back to the CPU goes to stderr.
engine::BackendKind command_backend(BackendChoice choice);

}  // namespace ghostline::daemon
