#include "lsp/auth_token.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "lsp/private_dir.h"
#include "lsp/server.h"

namespace ghostline::lsp {

bool tokens_equal(std::string_view presented, std::string_view expected) {
  // Every byte of `expected` is compared whatever the lengths; no early exit. The volatile
  // accumulator keeps the compiler from turning the loop back into a short-circuiting memcmp.
  volatile unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char p = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff = diff | (p ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

std::string generate_auth_token() {
  unsigned char bytes[32];
  for (size_t got = 0; got < sizeof bytes;) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::runtime_error(std::string("cannot generate an auth token: getrandom: ") +
                               std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

std::string tcp_token_file(const std::string& private_dir, int port) {
  return private_dir + "/ghostline-tcp-" + std::to_string(port) + ".token";
}

std::string generated_token_for(const std::string& host, int port) {
  if (!is_loopback_host(host)) return {};
  const PrivateDir dir = default_private_dir();
  struct stat st;
  if (::lstat(dir.path.c_str(), &st) != 0 && errno == ENOENT) return {};
  if (auto problem = private_dir_problem(dir))
    throw std::runtime_error("refusing to read a token from " + dir.path + ": " + *problem);
  return read_secret_file(tcp_token_file(dir.path, port)).value_or("");
}

bool add_auth_token(nlohmann::json& message, const std::string& token) {
  if (!message.is_object() || !message.contains("id") ||
      message.value("method", nlohmann::json()) != "initialize")
    return false;
  auto& params = message["params"];
  if (params.is_null()) params = nlohmann::json::object();
  if (!params.is_object()) return false;
  auto& options = params["initializationOptions"];
  if (options.is_null()) options = nlohmann::json::object();
  if (!options.is_object() || options.contains("authToken")) return false;
  options["authToken"] = token;
  return true;
}

}  // namespace ghostline::lsp
