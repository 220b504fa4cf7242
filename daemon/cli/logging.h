// Logging set-up shared by the subcommands: never to stdout (it carries LSP in stdio mode).
#pragma once

#include <string>

namespace ghostline::daemon {

// Level is one of trace, debug, info, warn, error, off. Logs go to `file` when given, else to
// stderr. Throws std::invalid_argument for an unknown level, std::runtime_error for a file
// that cannot be opened or that is not this user's to write (a symbolic link is never
// followed; a new file is made 0600). A log file that later cannot be written is reported once on
// stderr and logging stops.
void setup_logging(const std::string& level, const std::string& file);

}  // namespace ghostline::daemon
