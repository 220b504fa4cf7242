#include "lsp/client_connection.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "lsp/auth_token.h"
#include "lsp/private_dir.h"
#include "lsp/socket_client.h"
#include "lsp/transport.h"

namespace ghostline::lsp {

std::unique_ptr<ClientConnection> ClientConnection::spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::runtime_error("no daemon command given");
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(from_child[1], STDOUT_FILENO);
    ::execvp(cargs[0], cargs.data());
    std::fprintf(stderr, "cannot start %s: %s\n", cargs[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  return std::unique_ptr<ClientConnection>(new ClientConnection(from_child[0], to_child[1], pid));
}

std::unique_ptr<ClientConnection> ClientConnection::connect(const ListenAddress& address) {
  int fd = connect_to(address);
  if (fd < 0) {
    std::string where = address.kind == ListenAddress::Kind::Unix
                            ? "unix:" + address.path
                            : "tcp:" + address.host + ":" + std::to_string(address.port);
    throw std::runtime_error("no daemon listens at " + where + " (" + std::strerror(errno) +
                             "); start one with `ghostline serve --listen " + where + "`");
  }
  std::string token;
  if (address.kind == ListenAddress::Kind::Unix) {
    // Nothing is sent to a daemon of another user (a socket planted to read the traffic).
    if (auto problem = unix_peer_problem(fd, address.path)) {
      ::close(fd);
      throw std::runtime_error("refusing to connect: " + *problem);
    }
  } else {
    try {
      token = generated_token_for(address.host, address.port);
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  int write_fd = ::dup(fd);
  auto connection = std::unique_ptr<ClientConnection>(new ClientConnection(fd, write_fd, -1));
  connection->auth_token_ = std::move(token);
  return connection;
}

ClientConnection::ClientConnection(int read_fd, int write_fd, pid_t child)
    : read_fd_(read_fd), write_fd_(write_fd), child_(child) {
  reader_ = std::thread([this] { read_loop(); });
}

ClientConnection::~ClientConnection() {
  finish(std::chrono::milliseconds(2000));
}

void ClientConnection::read_loop() {
  lsp::FrameDecoder decoder(256u << 20);
  std::vector<char> buffer(64 * 1024);
  for (;;) {
    ssize_t n = ::read(read_fd_, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    auto now = Clock::now();
    std::vector<Received> parsed;
    for (auto& event : decoder.feed({buffer.data(), static_cast<size_t>(n)})) {
      if (auto* body = std::get_if<std::string>(&event)) {
        auto message = nlohmann::json::parse(*body, nullptr, false);
        if (!message.is_discarded()) parsed.push_back({std::move(message), now});
      }
    }
    if (!parsed.empty()) {
      std::lock_guard lock(mutex_);
      for (auto& r : parsed) inbox_.push_back(std::move(r));
      arrived_.notify_all();
    }
  }
  std::lock_guard lock(mutex_);
  eof_ = true;
  arrived_.notify_all();
}

ClientConnection::Clock::time_point ClientConnection::send(const nlohmann::json& message) {
  nlohmann::json with_token;
  const nlohmann::json* out = &message;
  if (!auth_token_.empty() && message.is_object() &&
      message.value("method", nlohmann::json()) == "initialize") {
    with_token = message;
    if (add_auth_token(with_token, auth_token_)) out = &with_token;
  }
  std::string frame =
      lsp::encode_frame(out->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  auto at = Clock::now();
  for (size_t off = 0; off < frame.size();) {
    ssize_t w = ::write(write_fd_, frame.data() + off, frame.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw std::runtime_error(std::string("the daemon closed the connection (") +
                               std::strerror(errno) + ")");
    off += static_cast<size_t>(w);
  }
  return at;
}

std::optional<ClientConnection::Received> ClientConnection::receive(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  arrived_.wait_until(lock, deadline, [&] { return !inbox_.empty() || eof_; });
  if (inbox_.empty()) return std::nullopt;
  Received r = std::move(inbox_.front());
  inbox_.pop_front();
  return r;
}

bool ClientConnection::closed() const {
  std::lock_guard lock(mutex_);
  return eof_ && inbox_.empty();
}

int ClientConnection::finish(std::chrono::milliseconds wait) {
  if (finished_) return exit_status_;
  finished_ = true;
  if (child_ < 0) ::shutdown(read_fd_, SHUT_RDWR);
  ::close(write_fd_);
  if (child_ > 0) {
    auto deadline = Clock::now() + wait;
    int status = 0;
    pid_t r = 0;
    while ((r = ::waitpid(child_, &status, WNOHANG)) == 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (r == 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, &status, 0);
    } else if (r > 0 && WIFEXITED(status)) {
      exit_status_ = WEXITSTATUS(status);
    }
  }
  if (reader_.joinable()) reader_.join();
  ::close(read_fd_);
  return exit_status_;
}

}  // namespace ghostline::lsp
