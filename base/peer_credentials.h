// Who is at the other end of a connected unix socket, as the kernel recorded it at connect or
// listen time. One file per system: peer_credentials_linux.cpp (SO_PEERCRED);
// peer_credentials_other.cpp cannot tell, so every peer is refused there.
#pragma once

#include <sys/types.h>

#include <optional>

namespace ghostline::platform {

// How the system tells, for messages: "cannot tell (SO_PEERCRED: ...)".
extern const char* const kPeerCredentialsMechanism;

// The effective user id of the peer; nullopt with errno set when it cannot be told (ENOSYS where
// the system offers no way).
std::optional<uid_t> unix_peer_uid(int socket_fd);

}  // namespace ghostline::platform
