// The shared secret that clients of a listening daemon present in `initialize`.
#pragma once

#include <string_view>

namespace ghostline::lsp {

// Whether `presented` equals `expected`, in a time that depends only on the length of
// `expected`: a client cannot learn the token a byte at a time by timing its rejections.
bool tokens_equal(std::string_view presented, std::string_view expected);

}  // namespace ghostline::lsp
