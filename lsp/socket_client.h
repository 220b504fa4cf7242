// Client side of the daemon's sockets: connects to a `ghostline serve --listen` address.
#pragma once

#include "lsp/server.h"

namespace ghostline::lsp {

// Returns a connected socket or -1 with errno set.
int connect_to(const ListenAddress& address);

}  // namespace ghostline::lsp
