// `ghostline connect`: bridges stdio to a running daemon's socket, starting the daemon when
// none is listening. This is how a stdio-only client (JetBrains through LSP4IJ, a terminal
// editor) shares one daemon, and so one loaded model, with other editors.
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/commands.h"
#include "lsp/auth_token.h"
#include "lsp/private_dir.h"
#include "lsp/server.h"
#include "lsp/socket_client.h"
#include "lsp/transport.h"

namespace ghostline::daemon {
namespace {

// The default socket lives in this user's private directory (lsp/private_dir.h), never in a
// directory where another user could plant a socket of their own first.
std::string default_socket_path() {
  return lsp::default_private_dir().path + "/ghostline.sock";
}

// Starts `ghostline serve --listen ADDR ARGS...` detached from this process and its terminal
// (adopted by init); returns the daemon's pid, or -1. `executable` is this one, run again.
pid_t start_daemon(const std::string& executable, const std::string& address,
                   const std::vector<std::string>& serve_args, const std::string& log_file) {
  int pid_pipe[2];
  if (::pipe(pid_pipe) != 0) return -1;
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::close(pid_pipe[0]);
    ::setsid();
    if (pid_t daemon = ::fork(); daemon != 0) {  // the grandchild is adopted by init
      ssize_t written = ::write(pid_pipe[1], &daemon, sizeof daemon);
      ::_exit(written == sizeof daemon ? 0 : 1);
    }
    ::close(pid_pipe[1]);
    int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    std::vector<std::string> argv = {"ghostline", "serve",      "--listen",
                                     address,     "--log-file", log_file};
    argv.insert(argv.end(), serve_args.begin(), serve_args.end());
    std::vector<char*> cargs;
    for (auto& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    ::execv(executable.c_str(), cargs.data());
    ::_exit(127);
  }
  ::close(pid_pipe[1]);
  pid_t daemon = -1;
  if (::read(pid_pipe[0], &daemon, sizeof daemon) != sizeof daemon) daemon = -1;
  ::close(pid_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? daemon : -1;
}

// The last lines of a log file, to show why a daemon stopped; a symbolic link is not followed.
std::string log_tail(const std::string& path, size_t lines) {
  lsp::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  std::string text;
  char buffer[64 * 1024];
  for (ssize_t n; fd.get() >= 0 && (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > 4 * sizeof buffer) text.erase(0, text.size() - 2 * sizeof buffer);
  }
  std::istringstream in(text);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& line : tail) out += "  " + line + "\n";
  return out;
}

bool write_all(int to, std::string_view bytes) {
  for (size_t off = 0; off < bytes.size();) {
    const ssize_t w = ::write(to, bytes.data() + off, bytes.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

bool read_more(int from, std::string& buffer) {
  char chunk[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(from, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
    return true;
  }
}

// The Content-Length of an LSP header block, or nullopt when it has none that parses.
std::optional<size_t> content_length(std::string_view headers) {
  for (size_t start = 0; start <= headers.size();) {
    size_t end = headers.find("\r\n", start);
    if (end == std::string_view::npos) end = headers.size();
    const std::string_view line = headers.substr(start, end - start);
    start = end + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name(line.substr(0, colon));
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name != "content-length") continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    size_t length = 0;
    const auto [end_of_number, error] =
        std::from_chars(value.data(), value.data() + value.size(), length);
    if (error != std::errc() || end_of_number == value.data()) return std::nullopt;
    return length;
  }
  return std::nullopt;
}

// Forwards the client's first message from `from` to `to`, with `token` added as
// initializationOptions.authToken when it is `initialize` (lsp::add_auth_token): the editor
// need not know the token the daemon generated. Bytes that do not make a well-formed message go
// through unchanged, for the daemon to answer. False when either side closed.
bool forward_first_message(int from, int to, const std::string& token) {
  constexpr size_t kMaxHeaderBytes = 64 * 1024, kMaxBodyBytes = size_t{256} << 20;
  std::string buffer;
  size_t header_end;
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (buffer.size() > kMaxHeaderBytes) return write_all(to, buffer);
    if (!read_more(from, buffer)) {
      write_all(to, buffer);
      return false;
    }
  }
  const auto length = content_length(std::string_view(buffer).substr(0, header_end));
  if (!length || *length > kMaxBodyBytes) return write_all(to, buffer);
  const size_t message_end = header_end + 4 + *length;
  while (buffer.size() < message_end) {
    if (!read_more(from, buffer)) {
      write_all(to, buffer);
      return false;
    }
  }
  const std::string_view body = std::string_view(buffer).substr(header_end + 4, *length);
  if (lsp::exceeds_nesting_depth(body, lsp::kMaxNestingDepth)) return write_all(to, buffer);
  auto message = nlohmann::json::parse(body, nullptr, false);
  if (message.is_discarded() || !lsp::add_auth_token(message, token)) return write_all(to, buffer);
  return write_all(to, lsp::encode_frame(message.dump(-1, ' ', false,
                                                      nlohmann::json::error_handler_t::replace))) &&
         write_all(to, std::string_view(buffer).substr(message_end));
}

// The token for a TCP daemon: from the environment variable named by --auth-token-env, else
// the one a local daemon generated (empty when there is none).
std::string tcp_auth_token(const lsp::ListenAddress& address, const std::string& token_env) {
  if (token_env.empty()) return lsp::generated_token_for(address.host, address.port);
  const char* value = std::getenv(token_env.c_str());
  if (!value || !*value)
    throw std::runtime_error("--auth-token-env " + token_env +
                             ": the variable is not set or empty");
  return value;
}

void copy_until_eof(int from, int to) {
  std::string buffer;
  while (read_more(from, buffer) && write_all(to, buffer)) buffer.clear();
}

}  // namespace

int connect_main(std::span<char* const> args) {
  std::string address_text, log_file, token_env;
  bool no_start = false;
  int wait_s = 60;
  std::vector<std::string> serve_args;
  ArgParser p("ghostline connect",
              "Bridges stdin/stdout to a running daemon, so that a client that can only start a\n"
              "stdio server shares one daemon (and one loaded model) with other editors. When\n"
              "nothing listens on a unix socket address, starts `ghostline serve --listen ADDR\n"
              "SERVE_ARGS...` in the background first. SERVE_ARGS follow a `--`.\n"
              "The default socket is in $XDG_RUNTIME_DIR, else in /tmp/ghostline-UID (made mode\n"
              "0700); either must belong to this user and be closed to others. A daemon on a\n"
              "unix socket must run as this user (SO_PEERCRED). On a loopback TCP address the\n"
              "token the daemon generated is read from ghostline-tcp-PORT.token in that directory\n"
              "and added to `initialize`.");
  p.positional("ADDR", "unix:PATH or tcp:HOST:PORT (default: unix:" + default_socket_path() + ")",
               &address_text, false);
  p.rest("SERVE_ARGS", "options for the daemon it starts, after `--` (e.g. -- --model FILE)",
         &serve_args);
  p.flag("--no-start", "fail instead of starting a daemon when none is listening", &no_start);
  p.option("--wait", "SECONDS",
           "how long to wait for a started daemon to listen (it loads the model first)", &wait_s);
  p.option("--log-file", "FILE", "log of a started daemon (default: the socket path + .log)",
           &log_file);
  p.option(
      "--auth-token-env", "VAR",
      "for tcp: send the token held in environment variable VAR (default: the token file\n      "
      "of a local daemon)",
      &token_env);
  if (auto exit = p.parse(args)) return *exit;
  if (address_text.empty()) {
    try {
      lsp::prepare_private_dir(lsp::default_private_dir());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ghostline connect: %s\n", e.what());
      return 1;
    }
    address_text = "unix:" + default_socket_path();
  }

  lsp::ListenAddress address;
  try {
    address = lsp::parse_listen_address(address_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline connect: %s\n", e.what());
    return 2;
  }
  const bool is_unix = address.kind == lsp::ListenAddress::Kind::Unix;
  std::string token;
  if (!is_unix) {
    try {
      token = tcp_auth_token(address, token_env);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ghostline connect: %s\n", e.what());
      return 1;
    }
  }
  int fd = lsp::connect_to(address);
  if (fd < 0) {
    if (no_start || !is_unix) {
      std::fprintf(stderr, "ghostline connect: no daemon at %s (%s)%s\n", address_text.c_str(),
                   std::strerror(errno),
                   is_unix ? "" : "; start one with ghostline serve --listen");
      return 1;
    }
    // The daemon refuses these too; checked here as well so that the reason reaches the editor
    // (the daemon's own stderr goes nowhere, and its log is one of the paths checked).
    if (auto problem = lsp::socket_path_problem(address.path)) {
      std::fprintf(stderr, "ghostline connect: refusing to start a daemon on %s: %s\n",
                   address.path.c_str(), problem->c_str());
      return 1;
    }
    if (log_file.empty()) log_file = address.path + ".log";
    try {
      lsp::open_log_file(log_file);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ghostline connect: %s\n", e.what());
      return 1;
    }
    std::fprintf(stderr, "ghostline connect: starting a daemon on %s (log: %s)\n",
                 address_text.c_str(), log_file.c_str());
    std::string executable;
    try {
      executable = self_executable();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ghostline connect: %s\n", e.what());
      return 1;
    }
    const pid_t daemon = start_daemon(executable, address_text, serve_args, log_file);
    if (daemon < 0) {
      std::fprintf(stderr, "ghostline connect: could not start the daemon\n");
      return 1;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
    while ((fd = lsp::connect_to(address)) < 0) {
      // A daemon that stopped (a missing model, a bad option) will never listen: say why now.
      if (::kill(daemon, 0) != 0 && errno == ESRCH) {
        std::fprintf(stderr,
                     "ghostline connect: the daemon stopped before listening; the end of %s:\n%s",
                     log_file.c_str(), log_tail(log_file, 5).c_str());
        return 1;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "ghostline connect: the daemon did not listen within %d s; see %s\n",
                     wait_s, log_file.c_str());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (is_unix) {
    if (auto problem = lsp::unix_peer_problem(fd, address.path)) {
      ::close(fd);
      std::fprintf(stderr, "ghostline connect: refusing to connect: %s\n", problem->c_str());
      return 1;
    }
  }
  // Client -> daemon on a thread; daemon -> client here. The daemon closing ends the bridge.
  std::thread up([fd, token] {
    if (token.empty() || forward_first_message(STDIN_FILENO, fd, token))
      copy_until_eof(STDIN_FILENO, fd);
    ::shutdown(fd, SHUT_WR);
  });
  up.detach();
  copy_until_eof(fd, STDOUT_FILENO);
  ::close(fd);
  return 0;
}

}  // namespace ghostline::daemon
