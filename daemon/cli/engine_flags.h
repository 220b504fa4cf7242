// The command-line options that fill EngineOptions, shared by `serve` and `complete`.
#pragma once

#include "daemon/cli/arg_parser.h"
#include "daemon/pipeline/engine_options.h"

namespace ghostline::daemon {

void add_engine_options(ArgParser& parser, EngineOptions& options);

}  // namespace ghostline::daemon
