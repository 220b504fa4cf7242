#include <utility>  // Asio 1.18 with g++ 12 in C++20 mode needs it before its own headers.

#include "lsp/server.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <list>
#include <set>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <boost/asio.hpp>
#include <spdlog/spdlog.h>

#include "base/peer_credentials.h"
#include "lsp/private_dir.h"
#include "lsp/transport.h"

namespace ghostline::lsp {

namespace asio = boost::asio;

ListenAddress parse_listen_address(const std::string& text) {
  if (text.rfind("unix:", 0) == 0) {
    ListenAddress a{ListenAddress::Kind::Unix, {}, 0, text.substr(5)};
    if (a.path.empty())
      throw std::invalid_argument("unix: needs a socket path, e.g. unix:/tmp/ghostline.sock");
    return a;
  }
  if (text.rfind("tcp:", 0) == 0) {
    std::string rest = text.substr(4);
    std::string host = "127.0.0.1", port = rest;
    if (auto colon = rest.rfind(':'); colon != std::string::npos) {
      host = rest.substr(0, colon);
      port = rest.substr(colon + 1);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    }
    int p = 0;
    try {
      size_t used = 0;
      p = std::stoi(port, &used);
      if (used != port.size()) p = -1;
    } catch (...) {
      p = -1;
    }
    if (p < 0 || p > 65535) throw std::invalid_argument("invalid TCP port '" + port + "'");
    return {ListenAddress::Kind::Tcp, host, p, {}};
  }
  throw std::invalid_argument("listen address must be tcp:HOST:PORT or unix:PATH, not '" + text +
                              "'");
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  return !ec && addr.is_loopback();
}

namespace {

// Blocking writes to stdout from the I/O thread; messages are small and the editor reads them.
class StdoutSink : public FrameSink {
 public:
  void write(std::string frame) override {
    if (closed_) return;
    const char* p = frame.data();
    size_t left = frame.size();
    while (left > 0) {
      ssize_t n = ::write(STDOUT_FILENO, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        spdlog::error("stdout closed ({}); the client is gone", std::strerror(errno));
        closed_ = true;
        return;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  void close() override {}

 private:
  bool closed_ = false;
};

template <typename Socket>
class Connection : public FrameSink, public std::enable_shared_from_this<Connection<Socket>> {
 public:
  Connection(Socket socket, int id, Scheduler& scheduler, Completer& completer,
             const ServerOptions& options, Recorder* recorder, std::function<void(int)> on_end)
      : socket_(std::move(socket)),
        transport_(id, *this, options.max_message_bytes, recorder),
        session_(id, transport_, scheduler, completer, options),
        on_end_(std::move(on_end)),
        max_queued_bytes_(options.max_unread_reply_bytes) {}

  void start() { read(); }

  void write(std::string frame) override {
    if (closing_) return;
    bool idle = writes_.empty();
    writes_.push_back(std::move(frame));
    queued_bytes_ += writes_.back().size();
    // A client that never reads its replies would make the daemon hold them all.
    if (queued_bytes_ > max_queued_bytes_) {
      spdlog::warn("session {}: the client has not read {} bytes of replies; disconnecting it",
                   session_.id(), queued_bytes_);
      // Nothing more is queued; the write in flight keeps its buffer until the close aborts it.
      // The session is ended from the I/O loop, not from inside its own call to send().
      closing_ = true;
      asio::post(socket_.get_executor(), [this, self = this->shared_from_this()] { end(); });
      return;
    }
    if (idle) write_next();
  }

  void close() override {
    closing_after_writes_ = true;
    if (writes_.empty()) shutdown();
  }

 private:
  void read() {
    auto self = this->shared_from_this();
    socket_.async_read_some(
        asio::buffer(buffer_), [this, self](boost::system::error_code ec, size_t n) {
          if (ec) {
            if (ec != asio::error::eof && ec != asio::error::operation_aborted)
              spdlog::warn("session {}: read error: {}", session_.id(), ec.message());
            end();
            return;
          }
          transport_.feed(std::string_view(buffer_.data(), n), session_);
          if (session_.exited()) {
            close();
            return;
          }
          read();
        });
  }

  void write_next() {
    auto self = this->shared_from_this();
    asio::async_write(socket_, asio::buffer(writes_.front()),
                      [this, self](boost::system::error_code ec, size_t) {
                        if (ec) {
                          spdlog::warn("session {}: write error: {}", session_.id(), ec.message());
                          writes_.clear();
                          end();
                          return;
                        }
                        queued_bytes_ -= writes_.front().size();
                        writes_.pop_front();
                        if (!writes_.empty()) {
                          write_next();
                        } else if (closing_after_writes_) {
                          shutdown();
                        }
                      });
  }

  void shutdown() {
    if (closing_) return;
    closing_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
    end();
  }

  void end() {
    if (ended_) return;
    ended_ = true;
    closing_ = true;
    transport_.disconnect(session_);
    boost::system::error_code ignored;
    socket_.close(ignored);
    on_end_(session_.id());
  }

  Socket socket_;
  JsonTransport transport_;
  Session session_;
  std::function<void(int)> on_end_;
  std::array<char, 64 * 1024> buffer_;
  std::deque<std::string> writes_;
  size_t queued_bytes_ = 0;
  size_t max_queued_bytes_;
  bool closing_ = false, closing_after_writes_ = false, ended_ = false;
};

}  // namespace

struct Server::Impl {
  Impl(Completer& c, ServerOptions o, Recorder* r)
      : completer(c),
        options(std::move(o)),
        recorder(r),
        scheduler(c, [this](std::function<void()> f) { asio::post(io, std::move(f)); },
                  std::chrono::milliseconds(options.defaults.debounce_ms)) {}

  asio::io_context io;
  Completer& completer;
  ServerOptions options;
  Recorder* recorder;
  Scheduler scheduler;
  std::unordered_map<int, std::shared_ptr<void>> connections;
  int next_session = 1;

  // After a failed accept, the next one waits this long (see accept). One acceptor listens at a
  // time, so one timer serves it.
  static constexpr std::chrono::milliseconds kAcceptRetry{100};
  asio::steady_timer accept_retry{io};

  // Whether the client at the other end of a unix socket runs as this daemon's user. The
  // socket's mode 0600 keeps other users out; this check still holds when the mode was changed
  // or the socket was reached some other way. A refused user is logged once, not per attempt.
  std::string listen_path;
  std::set<uid_t> refused_users;

  bool from_this_user(asio::local::stream_protocol::socket& socket) {
    const auto uid = peer_uid(socket.native_handle());
    if (uid && *uid == ::geteuid()) return true;
    const std::string who =
        uid ? describe_user(*uid)
            : "an unknown user (" + std::string(platform::kPeerCredentialsMechanism) + ": " +
                  std::strerror(errno) + ")";
    const uid_t key = uid ? *uid : static_cast<uid_t>(-1);
    if (refused_users.insert(key).second) {
      spdlog::warn(
          "refused a client of {} on unix:{}: only {} may connect to this daemon; its further "
          "attempts are refused without a word",
          who, listen_path, describe_user(::geteuid()));
    }
    return false;
  }

  template <typename Acceptor, typename Socket>
  void accept(Acceptor& acceptor) {
    acceptor.async_accept([this, &acceptor](boost::system::error_code ec, Socket socket) {
      if (ec) {
        if (ec == asio::error::operation_aborted) return;  // the acceptor closed: stopping
        // Out of file descriptors, or a connection aborted before it was taken: editors that
        // connect later must still be served, so accept again, after a pause that lets
        // sessions end and give their descriptors back.
        spdlog::error("accept failed: {}; accepting again in {} ms", ec.message(),
                      kAcceptRetry.count());
        accept_retry.expires_after(kAcceptRetry);
        accept_retry.async_wait([this, &acceptor](boost::system::error_code wait_ec) {
          if (!wait_ec) accept<Acceptor, Socket>(acceptor);
        });
        return;
      }
      if constexpr (std::is_same_v<Socket, asio::local::stream_protocol::socket>) {
        if (!from_this_user(socket)) {
          boost::system::error_code ignored;
          socket.close(ignored);
          accept<Acceptor, Socket>(acceptor);
          return;
        }
      }
      int id = next_session++;
      auto conn = std::make_shared<Connection<Socket>>(
          std::move(socket), id, scheduler, completer, options, recorder, [this](int ended) {
            // Defer: the connection is still on the stack when it reports its end.
            asio::post(io, [this, ended] {
              connections.erase(ended);
              spdlog::info("session {} ended ({} open)", ended, connections.size());
            });
          });
      connections[id] = conn;
      spdlog::info("session {} connected ({} open)", id, connections.size());
      conn->start();
      accept<Acceptor, Socket>(acceptor);
    });
  }
};

Server::Server(Completer& completer, ServerOptions options, Recorder* recorder)
    : impl_(std::make_unique<Impl>(completer, std::move(options), recorder)) {
  ::signal(SIGPIPE, SIG_IGN);
}

Server::~Server() {
  impl_->scheduler.stop();
}

int Server::run_stdio() {
  auto& io = impl_->io;
  StdoutSink sink;
  JsonTransport transport(0, sink, impl_->options.max_message_bytes, impl_->recorder);
  Session session(0, transport, impl_->scheduler, impl_->completer, impl_->options);
  int exit_code = 1;
  auto work = asio::make_work_guard(io);

  // stdin may be a pipe, a file or a terminal: read it on its own thread with blocking reads.
  std::thread reader([&io, &transport, &session, &exit_code] {
    std::array<char, 64 * 1024> buffer;
    for (;;) {
      ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        asio::post(io, [&io, &transport, &session, &exit_code] {
          if (!session.exited()) {
            spdlog::info("stdin closed without 'exit'");
            transport.disconnect(session);
          }
          exit_code = session.exit_code();
          io.stop();
        });
        return;
      }
      std::string chunk(buffer.data(), static_cast<size_t>(n));
      asio::post(io, [&io, &transport, &session, &exit_code, chunk = std::move(chunk)] {
        if (session.exited()) return;
        transport.feed(chunk, session);
        if (session.exited()) {
          exit_code = session.exit_code();
          io.stop();
        }
      });
    }
  });
  // The reader may be blocked in read() when the session exits; the process ends anyway.
  reader.detach();

  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code ec, int sig) {
    if (ec) return;
    spdlog::info("signal {} received; stopping", sig);
    transport.disconnect(session);
    io.stop();
  });
  io.run();
  impl_->scheduler.stop();
  return exit_code;
}

int Server::run_listen(const ListenAddress& address,
                       const std::function<void(const ListenAddress&)>& on_listening) {
  auto& io = impl_->io;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  std::unique_ptr<asio::ip::tcp::acceptor> tcp;
  std::unique_ptr<asio::local::stream_protocol::acceptor> local;

  if (address.kind == ListenAddress::Kind::Tcp) {
    boost::system::error_code ec;
    asio::ip::address host;
    if (address.host == "localhost") {
      host = asio::ip::address_v4::loopback();
    } else {
      host = asio::ip::make_address(address.host, ec);
      if (ec)
        throw std::runtime_error("invalid listen host '" + address.host + "': " + ec.message());
    }
    asio::ip::tcp::endpoint endpoint(host, static_cast<unsigned short>(address.port));
    tcp = std::make_unique<asio::ip::tcp::acceptor>(io);
    tcp->open(endpoint.protocol());
    tcp->set_option(asio::socket_base::reuse_address(true));
    tcp->bind(endpoint, ec);
    if (ec)
      throw std::runtime_error("cannot listen on " + address.host + ":" +
                               std::to_string(address.port) + ": " + ec.message());
    tcp->listen();
    ListenAddress bound = address;
    bound.port = tcp->local_endpoint().port();
    // Before the address is announced, so that a client that connects on reading it finds what
    // on_listening prepares (the token file).
    if (on_listening) on_listening(bound);
    // Port 0 binds an ephemeral port; print it so that scripts can connect.
    spdlog::info("listening on tcp:{}:{}", address.host, bound.port);
    std::fprintf(stderr, "ghostline: listening on tcp:%s:%u\n", address.host.c_str(), bound.port);
    impl_->accept<asio::ip::tcp::acceptor, asio::ip::tcp::socket>(*tcp);
  } else {
    // lstat, not stat: a symbolic link planted at the path is refused, never followed to a
    // socket (or a file) somewhere else. Only a socket of this user may be replaced.
    if (auto problem = socket_path_problem(address.path))
      throw std::runtime_error("refusing to listen on " + address.path + ": " + *problem);
    struct stat st;
    if (::lstat(address.path.c_str(), &st) == 0) {
      asio::local::stream_protocol::socket probe(io);
      boost::system::error_code ec;
      probe.connect(asio::local::stream_protocol::endpoint(address.path), ec);
      if (!ec) throw std::runtime_error("another daemon is already listening on " + address.path);
      ::unlink(address.path.c_str());  // stale socket of a daemon that died
    }
    impl_->listen_path = address.path;
    local = std::make_unique<asio::local::stream_protocol::acceptor>(io);
    boost::system::error_code ec;
    asio::local::stream_protocol::endpoint endpoint(address.path);
    local->open(endpoint.protocol());
    // The socket file is made 0600 (only this user's editors may connect) by the mask in force
    // when it is bound, so that no other user can connect before a chmod. The mask is the
    // process's, but no other thread creates files while the daemon starts listening.
    const mode_t mask = ::umask(0177);
    local->bind(endpoint, ec);
    ::umask(mask);
    if (ec) throw std::runtime_error("cannot listen on " + address.path + ": " + ec.message());
    local->listen();
    if (on_listening) {
      try {
        on_listening(address);
      } catch (...) {
        ::unlink(address.path.c_str());
        throw;
      }
    }
    spdlog::info("listening on unix:{}", address.path);
    std::fprintf(stderr, "ghostline: listening on unix:%s\n", address.path.c_str());
    impl_->accept<asio::local::stream_protocol::acceptor, asio::local::stream_protocol::socket>(
        *local);
  }

  signals.async_wait([&](boost::system::error_code ec, int sig) {
    if (ec) return;
    spdlog::info("signal {} received; stopping", sig);
    io.stop();
  });
  io.run();
  impl_->scheduler.stop();
  if (local) ::unlink(address.path.c_str());
  return 0;
}

}  // namespace ghostline::lsp
