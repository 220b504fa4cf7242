#include "lsp/uri.h"

#include <cctype>

namespace ghostline::lsp {

std::string uri_to_path(std::string_view uri) {
  constexpr std::string_view kScheme = "file://";
  if (uri.substr(0, kScheme.size()) != kScheme) return {};
  std::string_view rest = uri.substr(kScheme.size());
  // file://host/path: only local (empty or localhost) hosts name files here.
  auto slash = rest.find('/');
  if (slash == std::string_view::npos) return {};
  auto host = rest.substr(0, slash);
  if (!host.empty() && host != "localhost") return {};
  rest = rest.substr(slash);
  std::string path;
  path.reserve(rest.size());
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() &&
        std::isxdigit(static_cast<unsigned char>(rest[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(rest[i + 2]))) {
      path.push_back(static_cast<char>(std::stoi(std::string(rest.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      path.push_back(rest[i]);
    }
  }
  return path;
}

std::string path_to_uri(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri.push_back(static_cast<char>(c));
    } else {
      uri.push_back('%');
      uri.push_back(kHex[c >> 4]);
      uri.push_back(kHex[c & 15]);
    }
  }
  return uri;
}

}  // namespace ghostline::lsp
