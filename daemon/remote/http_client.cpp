#include "daemon/remote/http_client.h"

// Asio 1.18 with g++ 12 in C++20 mode needs <utility> before its headers.
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <sys/socket.h>

#include <cerrno>
#include <limits>
#include <optional>
#include <thread>

namespace ghostline::daemon::remote {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// How often a wait looks at the cancel flag.
constexpr auto kCancelPoll = std::chrono::milliseconds(5);
// The most of an error response kept for the message.
constexpr size_t kErrorBodyBytes = 512;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

Url Url::parse(std::string_view text) {
  Url u;
  std::string_view rest;
  if (text.starts_with("http://")) {
    rest = text.substr(7);
  } else if (text.starts_with("https://")) {
    u.tls = true;
    rest = text.substr(8);
  } else {
    throw std::invalid_argument("'" + std::string(text) + "' is not an http:// or https:// URL");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) u.base_path = rest.substr(slash);
  while (u.base_path.ends_with('/')) u.base_path.pop_back();
  if (authority.find('@') != std::string_view::npos)
    throw std::invalid_argument("URL '" + std::string(text) +
                                "' carries credentials; give the API key with --api-key-env VAR");
  if (authority.starts_with('[')) {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos)
      throw std::invalid_argument("URL '" + std::string(text) + "': unclosed '['");
    u.host = authority.substr(1, close - 1);
    authority.remove_prefix(close + 1);
    if (authority.starts_with(':')) u.port = authority.substr(1);
  } else {
    const size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) u.port = authority.substr(colon + 1);
  }
  if (u.host.empty()) throw std::invalid_argument("URL '" + std::string(text) + "' has no host");
  if (u.port.empty()) u.port = u.tls ? "443" : "80";
  if (u.port.find_first_not_of("0123456789") != std::string::npos || u.port.size() > 5)
    throw std::invalid_argument("URL '" + std::string(text) + "': bad port '" + u.port + "'");
  return u;
}

std::string Url::origin() const {
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" + port;
}

// One keep-alive connection, plain or TLS. Every operation goes through the tcp_stream, whose
// expiry gives the connect and read timeouts.
class HttpClient::Connection {
 public:
  Connection(asio::io_context& io, ssl::context* tls, const std::string& host) {
    if (tls) {
      tls_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(io, *tls);
      // SNI, and the certificate must name the host.
      if (!SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str()))
        throw HttpError("TLS: cannot set the server name '" + host + "'", true);
      tls_->set_verify_callback(ssl::host_name_verification(host));
    } else {
      plain_ = std::make_unique<beast::tcp_stream>(io);
    }
  }
  beast::tcp_stream& tcp() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }
  bool is_tls() const { return tls_ != nullptr; }
  beast::ssl_stream<beast::tcp_stream>& tls() { return *tls_; }

  // Calls `f` with the stream that HTTP goes through.
  template <class F>
  void with_stream(F&& f) {
    if (tls_)
      f(*tls_);
    else
      f(*plain_);
  }
  // Closes the socket: pending operations finish with an error, and the server sees the close.
  void close() {
    beast::error_code ignored;
    tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp().socket().close(ignored);
  }
  // A pooled connection that the server closed meanwhile reads as ready with nothing to read.
  bool still_open() {
    auto& s = tcp().socket();
    if (!s.is_open()) return false;
    char byte;
    const ssize_t n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  beast::flat_buffer buffer;

 private:
  std::unique_ptr<beast::tcp_stream> plain_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls_;
};

class HttpClient::Impl {
  using Parser = std::unique_ptr<http::response_parser<http::buffer_body>>;

 public:
  Impl(const Url& url, HttpClientOptions options) : url_(url), options_(std::move(options)) {
    if (url_.tls) {
      tls_.emplace(ssl::context::tls_client);
      tls_->set_default_verify_paths();
      if (!options_.ca_file.empty()) {
        beast::error_code ec;
        tls_->load_verify_file(options_.ca_file, ec);
        if (ec)
          throw std::invalid_argument("cannot load CA certificates from '" + options_.ca_file +
                                      "': " + ec.message());
      }
      tls_->set_verify_mode(ssl::verify_peer);
    }
  }

  StreamResult post_stream(std::string_view path, const std::string& body, const Headers& headers,
                           const OnBody& on_body, const std::atomic<bool>* cancel) {
    const auto start = Clock::now();
    StreamResult result;
    ++counters_.requests;

    http::request<http::string_body> req{http::verb::post, url_.base_path + std::string(path), 11};
    req.set(http::field::host, host_header());
    req.set(http::field::user_agent, "ghostline");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream");
    for (const auto& [name, value] : headers) req.set(name, value);
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();

    std::unique_ptr<Connection> conn;
    Parser parser;
    if (!open_response(req, false, cancel, result, conn, parser)) return cancelled(result);
    return receive(std::move(conn), *parser, start, on_body, cancel, false, result);
  }

  StreamResult get_stream(std::string_view target, const Headers& headers, const OnHead& on_head,
                          const OnBody& on_body, const std::atomic<bool>* cancel, bool head) {
    const auto start = Clock::now();
    StreamResult result;
    ++counters_.requests;

    http::request<http::string_body> req{head ? http::verb::head : http::verb::get,
                                         url_.base_path + std::string(target), 11};
    req.set(http::field::host, host_header());
    req.set(http::field::user_agent, "ghostline");
    for (const auto& [name, value] : headers) req.set(name, value);
    req.keep_alive(true);

    std::unique_ptr<Connection> conn;
    Parser parser;
    if (!open_response(req, head, cancel, result, conn, parser)) return cancelled(result);
    ResponseHead response;
    response.status = static_cast<int>(parser->get().result_int());
    for (const auto& f : parser->get())
      response.fields.emplace_back(std::string(f.name_string()), std::string(f.value()));
    if (!on_head(response)) {
      conn->close();
      result.status = response.status;
      result.end = StreamEnd::Stopped;
      ++counters_.streams_closed_early;
      return result;
    }
    return receive(std::move(conn), *parser, start, on_body, cancel, true, result);
  }

  HttpClientCounters counters() const { return counters_; }
  size_t idle() const { return idle_.size(); }

 private:
  // host[:port] as the request's Host header (the port only when it is not the scheme's).
  std::string host_header() const {
    const std::string host =
        url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host;
    const bool default_port = url_.port == (url_.tls ? "443" : "80");
    return default_port ? host : host + ":" + url_.port;
  }

  StreamResult& cancelled(StreamResult& r) {
    r.end = StreamEnd::Cancelled;
    ++counters_.streams_closed_early;
    return r;
  }

  std::unique_ptr<Connection> take_idle() {
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      if (c->still_open()) return c;
    }
    return nullptr;
  }

  // Runs the io_context until `done` is set. When `cancel` is set first, closes `conn` (so that
  // the pending operation ends and the server sees the close) and returns false.
  bool run_until(const bool& done, const std::atomic<bool>* cancel, Connection* conn) {
    io_.restart();
    while (!done) {
      io_.run_one_for(kCancelPoll);
      if (!done && cancel && cancel->load(std::memory_order_relaxed)) {
        if (conn) conn->close();
        while (!done) io_.run_one();  // the pending handler completes with an error
        return false;
      }
    }
    return true;
  }

  bool sleep(std::chrono::milliseconds d, const std::atomic<bool>* cancel) {
    const auto until = Clock::now() + d;
    while (Clock::now() < until) {
      if (cancel && cancel->load(std::memory_order_relaxed)) return false;
      std::this_thread::sleep_for(std::min<Clock::duration>(kCancelPoll, until - Clock::now()));
    }
    return true;
  }

  // Sends `req` and reads the response's header, on a pooled connection or a fresh one. A pooled
  // connection may have been closed by the server while idle; a failure to send on one is a
  // connection failure too (the server received nothing) and goes to a fresh one. Returns false
  // when cancelled.
  bool open_response(http::request<http::string_body>& req, bool head,
                     const std::atomic<bool>* cancel, StreamResult& result,
                     std::unique_ptr<Connection>& conn, Parser& parser) {
    for (int attempt = 0;; ++attempt) {
      conn = take_idle();
      result.reused_connection = conn != nullptr;
      try {
        if (!conn) conn = connect(cancel);
        if (!conn) return false;
        parser = std::make_unique<http::response_parser<http::buffer_body>>();
        // A response to HEAD announces a body that never comes.
        if (head) parser->skip(true);
        if (!send(*conn, req, cancel) ||
            !read_header(*conn, *parser, result.reused_connection, cancel))
          return false;
        break;
      } catch (const HttpError& e) {
        if (!e.connect_failure()) throw;
        if (result.reused_connection) continue;  // not counted: the pool was stale
        if (attempt >= options_.retries) throw;
        ++result.retries;
        ++counters_.connect_retries;
        if (!sleep(options_.retry_backoff * (1 << attempt), cancel)) return false;
      }
    }
    if (result.reused_connection) ++counters_.connections_reused;
    return true;
  }

  // Resolves, connects and (https) does the TLS handshake, all under the connect timeout.
  // Returns nullptr when cancelled.
  std::unique_ptr<Connection> connect(const std::atomic<bool>* cancel) {
    auto conn = std::make_unique<Connection>(io_, tls_ ? &*tls_ : nullptr, url_.host);
    tcp::resolver resolver(io_);
    beast::error_code ec;
    bool done = false;
    tcp::resolver::results_type endpoints;
    resolver.async_resolve(url_.host, url_.port,
                           [&](beast::error_code e, tcp::resolver::results_type r) {
                             ec = e;
                             endpoints = std::move(r);
                             done = true;
                           });
    if (!run_until(done, cancel, nullptr)) {
      resolver.cancel();
      return nullptr;
    }
    if (ec) throw HttpError("cannot resolve " + url_.host + ": " + ec.message(), true);

    done = false;
    conn->tcp().expires_after(options_.connect_timeout);
    conn->tcp().async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
      ec = e;
      done = true;
    });
    if (!run_until(done, cancel, conn.get())) return nullptr;
    if (ec) throw HttpError("cannot connect to " + url_.origin() + ": " + ec.message(), true);

    if (conn->is_tls()) {
      done = false;
      conn->tls().async_handshake(ssl::stream_base::client, [&](beast::error_code e) {
        ec = e;
        done = true;
      });
      if (!run_until(done, cancel, conn.get())) return nullptr;
      if (ec)
        throw HttpError("TLS handshake with " + url_.origin() + " failed: " + ec.message(), true);
    }
    ++counters_.connections_opened;
    return conn;
  }

  bool send(Connection& conn, http::request<http::string_body>& req,
            const std::atomic<bool>* cancel) {
    beast::error_code ec;
    bool done = false;
    conn.tcp().expires_after(options_.read_timeout);
    conn.with_stream([&](auto& stream) {
      http::async_write(stream, req, [&](beast::error_code e, size_t) {
        ec = e;
        done = true;
      });
    });
    if (!run_until(done, cancel, &conn)) return false;
    if (ec) throw HttpError("cannot send to " + url_.origin() + ": " + ec.message(), true);
    return true;
  }

  // Reads the response's header. A keep-alive connection that the server closed just as the
  // request went out ends before any byte of it: that is a connection failure (the request
  // goes to a fresh connection); on a fresh connection it is the server's failure.
  bool read_header(Connection& conn, http::response_parser<http::buffer_body>& parser, bool reused,
                   const std::atomic<bool>* cancel) {
    // No limit; not boost::none: Beast 1.74 compares a Content-Length with the optional limit,
    // and any length is greater than an empty one (a GGUF download has a Content-Length).
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    beast::error_code ec;
    bool done = false;
    conn.tcp().expires_after(options_.read_timeout);
    conn.with_stream([&](auto& stream) {
      http::async_read_header(stream, conn.buffer, parser, [&](beast::error_code e, size_t) {
        ec = e;
        done = true;
      });
    });
    if (!run_until(done, cancel, &conn)) return false;
    if (reused && (ec == http::error::end_of_stream || ec == asio::error::eof ||
                   ec == asio::error::connection_reset))
      throw HttpError("kept-alive connection closed by the server", true);
    if (ec) throw read_error("waiting for the response", ec);
    return true;
  }

  // Reads the body in pieces as they arrive.
  StreamResult receive(std::unique_ptr<Connection> owned,
                       http::response_parser<http::buffer_body>& parser, Clock::time_point start,
                       const OnBody& on_body, const std::atomic<bool>* cancel, bool any_status,
                       StreamResult& result) {
    Connection& conn = *owned;
    beast::error_code ec;
    bool done = false;
    result.status = static_cast<int>(parser.get().result_int());

    std::string error_body;
    char piece[8192];
    bool stopped = false;
    while (!parser.is_done()) {
      parser.get().body().data = piece;
      parser.get().body().size = sizeof(piece);
      done = false;
      conn.tcp().expires_after(options_.read_timeout);
      conn.with_stream([&](auto& stream) {
        // read_some: hand over what has arrived (async_read would wait to fill the buffer).
        http::async_read_some(stream, conn.buffer, parser, [&](beast::error_code e, size_t) {
          ec = e;
          done = true;
        });
      });
      if (!run_until(done, cancel, &conn)) return cancelled(result);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) throw read_error(result.body_bytes ? "mid-stream" : "reading the response", ec);
      const size_t n = sizeof(piece) - parser.get().body().size;
      if (n == 0) continue;
      if (result.first_byte_ms < 0) result.first_byte_ms = ms_between(start, Clock::now());
      result.body_bytes += n;
      if (result.status != 200 && !any_status) {
        error_body.append(
            piece, std::min(n, kErrorBodyBytes - std::min(kErrorBodyBytes, error_body.size())));
        continue;
      }
      if (!on_body(std::string_view(piece, n))) {
        stopped = true;
        break;
      }
    }
    if (result.status != 200 && !any_status)
      throw HttpError(
          url_.origin() + " answered " + std::to_string(result.status) + ": " + error_body, false,
          result.status);
    if (stopped) {
      // Closing is what tells the server to stop generating.
      conn.close();
      result.end = StreamEnd::Stopped;
      ++counters_.streams_closed_early;
      return result;
    }
    result.end = StreamEnd::Complete;
    if (parser.keep_alive() && static_cast<int>(idle_.size()) < options_.pool_size) {
      conn.tcp().expires_never();  // an expiry left set would fail the next request at once
      idle_.push_back(std::move(owned));
    }
    return result;
  }

  HttpError read_error(const std::string& when, const beast::error_code& ec) const {
    if (ec == beast::error::timeout)
      return HttpError(url_.origin() + " sent nothing for " +
                           std::to_string(options_.read_timeout.count()) + " ms (" + when + ")",
                       false);
    return HttpError("connection to " + url_.origin() + " lost " + when + ": " + ec.message(),
                     false);
  }

  Url url_;
  HttpClientOptions options_;
  asio::io_context io_;
  std::optional<ssl::context> tls_;
  std::vector<std::unique_ptr<Connection>> idle_;
  HttpClientCounters counters_;
};

HttpClient::HttpClient(Url url, HttpClientOptions options)
    : url_(std::move(url)), impl_(std::make_unique<Impl>(url_, std::move(options))) {}
HttpClient::~HttpClient() = default;

StreamResult HttpClient::post_stream(std::string_view path, const std::string& body,
                                     const Headers& headers, const OnBody& on_body,
                                     const std::atomic<bool>* cancel) {
  return impl_->post_stream(path, body, headers, on_body, cancel);
}

StreamResult HttpClient::get_stream(std::string_view target, const Headers& headers,
                                    const OnHead& on_head, const OnBody& on_body,
                                    const std::atomic<bool>* cancel, Method method) {
  return impl_->get_stream(target, headers, on_head, on_body, cancel, method == Method::Head);
}

std::string ResponseHead::field(std::string_view name) const {
  for (const auto& [n, v] : fields)
    if (beast::iequals(n, beast::string_view(name.data(), name.size()))) return v;
  return {};
}

HttpClientCounters HttpClient::counters() const {
  return impl_->counters();
}
size_t HttpClient::idle_connections() const {
  return impl_->idle();
}

}  // namespace ghostline::daemon::remote
