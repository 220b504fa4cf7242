// --backend, for every command that takes it: bench, generate and logits directly, serve and
// complete through add_engine_options (engine_flags.h).
#pragma once

#include "daemon/cli/arg_parser.h"
#include "daemon/pipeline/engine_options.h"
#include "engine/backend/backend.h"

namespace ghostline::daemon {

// Every command parses the four names (remote fails later where it is not available); the help
// offers remote where `with_remote` (serve and complete, which take its options too).
void add_backend_option(ArgParser& parser, BackendChoice& choice, bool with_remote = false);

// engine_backend() for a command: the note that auto falls back to the CPU goes to stderr.
engine::BackendKind command_backend(BackendChoice choice);

}  // namespace ghostline::daemon
