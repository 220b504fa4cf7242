// file:// URIs as editors send them, to and from local paths.
#pragma once

#include <string>
#include <string_view>

namespace ghostline::lsp {

// The local path of a file:// URI, percent-decoded; empty for other schemes or remote hosts.
std::string uri_to_path(std::string_view uri);
std::string path_to_uri(std::string_view path);

}  // namespace ghostline::lsp
