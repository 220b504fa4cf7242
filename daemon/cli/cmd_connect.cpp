// `ghostline connect`: bridges stdio to a running daemon's socket, starting the daemon when
// none is listening. This is how a stdio-only client (JetBrains through LSP4IJ, a terminal
// editor) shares one daemon, and so one loaded model, with other editors.
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <deque>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/cli/arg_parser.h"
#include "lsp/socket_client.h"
#include "lsp/server.h"

namespace ghostline::daemon {
namespace {

std::string default_socket_path() {
  if (const char* dir = std::getenv("XDG_RUNTIME_DIR"); dir && *dir)
    return std::string(dir) + "/ghostline.sock";
  return "/tmp/ghostline-" + std::to_string(::getuid()) + ".sock";
}

// Starts `ghostline serve --listen ADDR ARGS...` detached from this process and its terminal
// (adopted by init); returns the daemon's pid, or -1.
pid_t start_daemon(const std::string& address, const std::vector<std::string>& serve_args,
                   const std::string& log_file) {
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
    std::vector<std::string> argv = {"ghostline", "serve", "--listen", address, "--log-file", log_file};
    argv.insert(argv.end(), serve_args.begin(), serve_args.end());
    std::vector<char*> cargs;
    for (auto& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    ::execv("/proc/self/exe", cargs.data());
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

// The last lines of a log file, to show why a daemon stopped.
std::string log_tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& line : tail) out += "  " + line + "\n";
  return out;
}

void copy_until_eof(int from, int to, bool shutdown_socket_after) {
  std::vector<char> buffer(64 * 1024);
  for (;;) {
    ssize_t n = ::read(from, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(to, buffer.data() + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;
      off += w;
    }
  }
  if (shutdown_socket_after) ::shutdown(to, SHUT_WR);
}

}  // namespace

int connect_main(std::span<char* const> args) {
  std::string address_text, log_file;
  bool no_start = false;
  int wait_s = 60;
  std::vector<std::string> serve_args;
  ArgParser p("ghostline connect",
              "Bridges stdin/stdout to a running daemon, so that a client that can only start a\n"
              "stdio server shares one daemon (and one loaded model) with other editors. When\n"
              "nothing listens on a unix socket address, starts `ghostline serve --listen ADDR\n"
              "SERVE_ARGS...` in the background first. SERVE_ARGS follow a `--`.");
  p.positional("ADDR", "unix:PATH or tcp:HOST:PORT (default: unix:" + default_socket_path() + ")",
               &address_text, false);
  p.rest("SERVE_ARGS", "options for the daemon it starts, after `--` (e.g. -- --model FILE)", &serve_args);
  p.flag("--no-start", "fail instead of starting a daemon when none is listening", &no_start);
  p.option("--wait", "SECONDS", "how long to wait for a started daemon to listen (it loads the model first)",
           &wait_s);
  p.option("--log-file", "FILE", "log of a started daemon (default: the socket path + .log)", &log_file);
  if (auto exit = p.parse(args)) return *exit;
  if (address_text.empty()) address_text = "unix:" + default_socket_path();

  lsp::ListenAddress address;
  try {
    address = lsp::parse_listen_address(address_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline connect: %s\n", e.what());
    return 2;
  }
  int fd = lsp::connect_to(address);
  if (fd < 0) {
    if (no_start || address.kind != lsp::ListenAddress::Kind::Unix) {
      std::fprintf(stderr, "ghostline connect: no daemon at %s (%s)%s\n", address_text.c_str(),
                   std::strerror(errno),
                   address.kind == lsp::ListenAddress::Kind::Unix ? "" : "; start one with ghostline serve --listen");
      return 1;
    }
    if (log_file.empty()) log_file = address.path + ".log";
    std::fprintf(stderr, "ghostline connect: starting a daemon on %s (log: %s)\n", address_text.c_str(),
                 log_file.c_str());
    const pid_t daemon = start_daemon(address_text, serve_args, log_file);
    if (daemon < 0) {
      std::fprintf(stderr, "ghostline connect: could not start the daemon\n");
      return 1;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
    while ((fd = lsp::connect_to(address)) < 0) {
      // A daemon that stopped (a missing model, a bad option) will never listen: say why now.
      if (::kill(daemon, 0) != 0 && errno == ESRCH) {
        std::fprintf(stderr, "ghostline connect: the daemon stopped before listening; the end of %s:\n%s",
                     log_file.c_str(), log_tail(log_file, 5).c_str());
        return 1;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "ghostline connect: the daemon did not listen within %d s; see %s\n", wait_s,
                     log_file.c_str());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  // Client -> daemon on a thread; daemon -> client here. The daemon closing ends the bridge.
  std::thread up([fd] { copy_until_eof(STDIN_FILENO, fd, true); });
  up.detach();
  copy_until_eof(fd, STDOUT_FILENO, false);
  ::close(fd);
  return 0;
}

}  // namespace ghostline::daemon
