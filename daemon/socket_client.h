// Client side of the daemon's sockets: connects to a `ghostline serve --listen` address.
#pragma once

#include "lsp/transport.h"

namespace ghostline::daemon {

// Returns a connected socket or -1 with errno set.
int connect_to(const lsp::ListenAddress& address);

}  // namespace ghostline::daemon
