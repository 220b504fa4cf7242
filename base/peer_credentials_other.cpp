// peer_credentials.h on a system without a file of its own: no portable call names the peer of a
// unix socket, so none is told and, the check failing, every peer is refused with that reason.
#include "base/peer_credentials.h"

#include <cerrno>

namespace ghostline::platform {

const char* const kPeerCredentialsMechanism = "peer credentials, not implemented on this system";

std::optional<uid_t> unix_peer_uid(int) {
  errno = ENOSYS;
  return std::nullopt;
}

}  // namespace ghostline::platform
