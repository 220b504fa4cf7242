// The shared secret that clients of a listening daemon present in `initialize`.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace ghostline::lsp {

// Whether `presented` equals `expected`, in a time that depends only on the length of
// `expected`: a client cannot learn the token a byte at a time by timing its rejections.
bool tokens_equal(std::string_view presented, std::string_view expected);

// 32 bytes from the kernel's random source, as 64 hex digits. Throws std::runtime_error when
// the source fails.
std::string generate_auth_token();

// The file in `private_dir` where a daemon on TCP port `port` keeps the token it generated, for
// this user's clients (`ghostline connect`, `ghostline replay`) to read.
std::string tcp_token_file(const std::string& private_dir, int port);

// The token a daemon of this user listening on loopback port `port` generated, read from its
// file in this user's private directory; empty when there is none, and for a host that is not
// loopback (a remote daemon never sees a local one's token). Throws std::runtime_error when the
// directory or the file is not this user's alone.
std::string generated_token_for(const std::string& host, int port);

// Puts `token` into an `initialize` request as params.initializationOptions.authToken, unless
// the client gave one itself. Returns whether `message` was changed: not for another message,
// nor for one whose params or initializationOptions are not objects (the daemon answers those).
bool add_auth_token(nlohmann::json& message, const std::string& token);

}  // namespace ghostline::lsp
