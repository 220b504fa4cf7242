// Carries LSP sessions over stdio, TCP or a unix socket. All sessions of one server share one
// Scheduler (and so one engine); each connection has its own Session and documents.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "lsp/completer.h"
#include "lsp/session.h"

namespace ghostline::lsp {

class Recorder;

struct ListenAddress {
  enum class Kind { Tcp, Unix } kind;
  std::string host;  // Tcp
  int port = 0;      // Tcp
  std::string path;  // Unix
};

// Parses "tcp:HOST:PORT", "tcp:PORT" (loopback) or "unix:PATH"; throws std::invalid_argument.
ListenAddress parse_listen_address(const std::string& text);
bool is_loopback_host(const std::string& host);

class Server {
 public:
  Server(Completer& completer, ServerOptions options, Recorder* recorder);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves one session on stdin/stdout until exit or EOF; returns the process exit code.
  int run_stdio();
  // Accepts connections until SIGINT/SIGTERM; returns the exit code. Throws
  // std::runtime_error when the address cannot be bound, or when something other than a socket
  // of this user is at a unix socket's path (a symbolic link is never followed). On a unix
  // socket only clients of this user are served (SO_PEERCRED). `on_listening` is called once the
  // socket listens, before the first client is accepted, with the address as bound (the port
  // that tcp:HOST:0 got) and before "listening on" is printed; what it throws ends run_listen.
  int run_listen(const ListenAddress& address,
                 const std::function<void(const ListenAddress& bound)>& on_listening = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ghostline::lsp
