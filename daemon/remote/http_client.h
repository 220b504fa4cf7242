// A streaming HTTP/1.1 client for one server (Boost.Beast, TLS through Boost.Asio SSL and
// OpenSSL): POSTs a JSON body to an inference server, or GETs a file (`ghostline pull`), and hands
// the response body to the caller as it arrives.
//
// It runs its own io_context on the calling thread and polls the cancel flag every few
// milliseconds while waiting, so that a cancelled request closes its connection at once: the
// server sees the stream close and stops generating. Connections that finished a response are
// kept alive in a small pool; a stream closed early is never reused.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ghostline::daemon::remote {

struct Url {
  bool tls = false;
  std::string host;
  std::string port;
  std::string base_path;  // without a trailing '/'; API paths are appended

  // Accepts http://host[:port][/path] and https://...; throws std::invalid_argument with the
  // reason otherwise.
  static Url parse(std::string_view text);
  std::string origin() const;  // scheme://host:port, for messages
};

struct HttpClientOptions {
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds read_timeout{10000};
  int retries = 2;
  std::chrono::milliseconds retry_backoff{50};
  int pool_size = 4;
  std::string ca_file;  // extra CA certificates (PEM) besides the system's; empty: none
};

// A request that failed. `connect` is true when nothing reached the server (resolve, connect
// or TLS handshake failed): only those are retried.
class HttpError : public std::runtime_error {
 public:
  HttpError(const std::string& what, bool connect, int status = 0)
      : std::runtime_error(what), connect_(connect), status_(status) {}
  bool connect_failure() const { return connect_; }
  int status() const { return status_; }  // the HTTP status when the server answered, else 0

 private:
  bool connect_;
  int status_;
};

enum class StreamEnd {
  Complete,   // the server ended the response
  Stopped,    // the reader asked to stop; the connection was closed
  Cancelled,  // the cancel flag was set; the connection was closed
};

struct StreamResult {
  StreamEnd end = StreamEnd::Complete;
  int status = 0;
  bool reused_connection = false;
  int retries = 0;            // connection failures retried before this request went through
  double first_byte_ms = -1;  // from the call to the first byte of the response body
  size_t body_bytes = 0;
};

// The status line and header of a response, as `get_stream` hands them over.
struct ResponseHead {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> fields;  // in the order received
  // The value of the first field named `name` (case-insensitive), or empty.
  std::string field(std::string_view name) const;
};

struct HttpClientCounters {
  uint64_t requests = 0;
  uint64_t connections_opened = 0;
  uint64_t connections_reused = 0;
  uint64_t connect_retries = 0;
  uint64_t streams_closed_early = 0;  // stopped by the reader or cancelled
};

class HttpClient {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  // Called with each piece of the response body; returns false to stop reading.
  using OnBody = std::function<bool(std::string_view)>;

  HttpClient(Url url, HttpClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // POSTs `body` (JSON) to the base path + `path`. Returns once the response ended, the reader
  // stopped or `cancel` was set; throws HttpError for a failure (a status other than 200 with
  // the start of the server's message, a timeout, a connection lost mid-stream). Not
  // thread-safe: one caller at a time.
  StreamResult post_stream(std::string_view path, const std::string& body, const Headers& headers,
                           const OnBody& on_body, const std::atomic<bool>* cancel);

  // Called with the head of a GET's response, whatever its status; returns false to skip the
  // body (the connection is then closed, not reused).
  using OnHead = std::function<bool(const ResponseHead&)>;
  enum class Method { Get, Head };

  // GETs (or HEADs) the base path + `target` (path and query). Unlike post_stream, every status
  // is the caller's to judge (redirects, 206, 404): `on_head` sees it, then `on_body` gets the
  // body of any status. Throws HttpError when no response arrived or the connection was lost in
  // the body; a body cut short (the server closed early) is such a loss.
  StreamResult get_stream(std::string_view target, const Headers& headers, const OnHead& on_head,
                          const OnBody& on_body, const std::atomic<bool>* cancel,
                          Method method = Method::Get);

  const Url& url() const { return url_; }
  HttpClientCounters counters() const;
  size_t idle_connections() const;

 private:
  class Connection;
  class Impl;
  Url url_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ghostline::daemon::remote
