// peer_credentials.h on Linux: SO_PEERCRED.
#include "base/peer_credentials.h"

#include <sys/socket.h>

namespace ghostline::platform {

const char* const kPeerCredentialsMechanism = "SO_PEERCRED";

std::optional<uid_t> unix_peer_uid(int socket_fd) {
  struct ucred credentials {};
  socklen_t length = sizeof credentials;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0)
    return std::nullopt;
  return credentials.uid;
}

}  // namespace ghostline::platform
