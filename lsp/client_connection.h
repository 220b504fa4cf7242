// The client's end of an LSP connection to a daemon, for tools that drive the real server
// (`ghostline replay`): a child process on pipes or a running daemon's socket. Messages are
// read on a thread and handed out with the time they arrived.
#pragma once

#include <sys/types.h>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lsp/server.h"

namespace ghostline::lsp {

class ClientConnection {
 public:
  using Clock = std::chrono::steady_clock;
  struct Received {
    nlohmann::json message;
    Clock::time_point at;
  };

  // Starts argv[0] (looked up in PATH) with argv as its arguments, speaking LSP on its
  // stdin/stdout; its stderr is inherited. Throws std::runtime_error when it cannot start.
  static std::unique_ptr<ClientConnection> spawn(const std::vector<std::string>& argv);
  // Connects to a listening daemon. Throws std::runtime_error when nothing listens there, or
  // when a unix socket's daemon runs as another user. On a loopback TCP address the token a
  // local daemon generated (generated_token_for) is added to `initialize`.
  static std::unique_ptr<ClientConnection> connect(const ListenAddress& address);

  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Writes one framed message and returns the time just before writing it. Throws
  // std::runtime_error when the daemon is gone.
  Clock::time_point send(const nlohmann::json& message);
  // The next message, waiting until `deadline`; nullopt on timeout or once the daemon closed
  // the connection and everything was handed out (then closed() is true).
  std::optional<Received> receive(Clock::time_point deadline);
  bool closed() const;
  // Closes our side and waits up to `wait` for the daemon to end (killing a child that does
  // not). Returns the child's exit status, or -1 (a socket, killed, or not a normal exit).
  int finish(std::chrono::milliseconds wait);

 private:
  ClientConnection(int read_fd, int write_fd, pid_t child);
  void read_loop();

  int read_fd_, write_fd_;
  pid_t child_;
  std::thread reader_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<Received> inbox_;
  bool eof_ = false;
  bool finished_ = false;
  int exit_status_ = -1;
  std::string auth_token_;
};

}  // namespace ghostline::lsp
