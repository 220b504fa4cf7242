// The command-line options that fill EngineOptions, shared by `serve` and `complete`.
#pragma once

#include "daemon/cli/arg_parser.h"
#include "daemon/pipeline/engine_options.h"

namespace ghostline::daemon {

void add_engine_options(ArgParser& parser, EngineOptions& options);
// The remote backend's options (part of add_engine_options).
void add_remote_options(ArgParser& parser, remote::RemoteOptions& options);

}  // namespace ghostline::daemon
