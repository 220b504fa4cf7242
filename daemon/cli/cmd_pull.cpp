// `ghostline pull NAME`: downloads a GGUF model from the Hugging Face hub (or a mirror at
// $HF_ENDPOINT) into the user's model folder, so that `--model NAME` finds it.
//
// The download goes to NAME.gguf.part beside the final file and resumes from it with a Range
// request; the file takes its name (an atomic rename) only once its size and SHA-256 match the
// hub's metadata. Every file is opened relative to the folder without following symbolic links.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/model_command.h"
#include "daemon/cli/model_names.h"
#include "daemon/remote/http_client.h"

namespace ghostline::daemon {

namespace {

using remote::HttpClient;
using remote::HttpError;
using remote::ResponseHead;
using remote::Url;
using Clock = std::chrono::steady_clock;

constexpr int kMaxRedirects = 10;
constexpr size_t kMaxMetadataBytes = 64 << 20;

// A failure with the whole message for the user.
class PullError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An absolute URL split into the server (for HttpClient) and the request target.
struct Location {
  Url origin;
  std::string target;  // path and query
};

Location split_url(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) throw PullError("'" + url + "' is not an absolute URL");
  const size_t authority_end = url.find_first_of("/?#", scheme_end + 3);
  Location l{Url::parse(url.substr(0, authority_end)), "/"};
  if (authority_end != std::string::npos) {
    l.target = url.substr(authority_end);
    if (const size_t hash = l.target.find('#'); hash != std::string::npos) l.target.resize(hash);
    if (l.target.starts_with('?')) l.target.insert(0, "/");
  }
  return l;
}

bool same_origin(const Url& a, const Url& b) {
  return a.tls == b.tls && a.host == b.host && a.port == b.port;
}

// Where a Location header points, from the request that answered it: absolute, scheme-relative,
// absolute path, or relative to the current path.
Location follow(const Location& from, const std::string& location) {
  if (location.starts_with("http://") || location.starts_with("https://"))
    return split_url(location);
  if (location.starts_with("//"))
    return split_url((from.origin.tls ? "https:" : "http:") + location);
  Location next{from.origin, location};
  if (!location.starts_with('/')) {
    std::string dir = from.target.substr(0, from.target.find('?'));
    dir.resize(dir.rfind('/') + 1);
    next.target = dir + location;
  }
  return next;
}

std::string percent_encode_path(std::string_view path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("/._-~", c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

bool is_sha256(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) { reset(); }
  void reset() {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("OpenSSL: cannot start a SHA-256");
  }
  void update(std::string_view bytes) { EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest, &n);
    std::string out;
    char byte[3];
    for (unsigned int i = 0; i < n; ++i) {
      std::snprintf(byte, sizeof byte, "%02x", digest[i]);
      out += byte;
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string hms(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// Download progress on stderr: a bar redrawn in place on a terminal, otherwise a plain line at
// every tenth of the file and at least every 10 s of a slow one.
class Progress {
 public:
  Progress(uint64_t total, uint64_t resumed_at, bool terminal)
      : total_(total),
        start_bytes_(resumed_at),
        terminal_(terminal),
        start_(Clock::now()),
        last_print_(start_) {}

  void update(uint64_t done) {
    const auto now = Clock::now();
    const int tenth = total_ ? static_cast<int>(done * 10 / total_) : 0;
    const bool due = terminal_
                         ? now - last_print_ >= std::chrono::milliseconds(100)
                         : tenth > last_tenth_ || now - last_print_ >= std::chrono::seconds(10);
    if (!due && done != total_) return;
    print(done, now);
    last_tenth_ = tenth;
    last_print_ = now;
  }

  void finish(uint64_t done) {
    print(done, Clock::now());
    if (terminal_) std::fputc('\n', stderr);
  }

 private:
  void print(uint64_t done, Clock::time_point now) {
    if (done == printed_ && !terminal_) return;
    printed_ = done;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? (done - start_bytes_) / seconds : 0;
    const int percent = total_ ? static_cast<int>(done * 100 / total_) : 100;
    const std::string left = rate > 0 && done < total_ ? hms((total_ - done) / rate) + " left" : "";
    const std::string figures = format_bytes(done) + " / " + format_bytes(total_) + "  " +
                                format_bytes(static_cast<uint64_t>(rate)) + "/s  " + left;
    if (terminal_) {
      constexpr int kWidth = 30;
      const int filled = percent * kWidth / 100;
      std::fprintf(stderr, "\r%3d%% [%s%s] %s\x1b[K", percent, std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, '.').c_str(), figures.c_str());
    } else {
      std::fprintf(stderr, "%3d%%  %s\n", percent, figures.c_str());
    }
    std::fflush(stderr);
  }

  uint64_t total_, start_bytes_;
  bool terminal_;
  Clock::time_point start_, last_print_;
  int last_tenth_ = -1;
  uint64_t printed_ = ~uint64_t{0};
};

// What the hub says the file is.
struct Expected {
  uint64_t size = 0;
  std::string sha256;  // empty until known
};

class Pull {
 public:
  Pull(HubFile file, std::string endpoint, std::string ca_file)
      : file_(std::move(file)), endpoint_text_(std::move(endpoint)) {
    try {
      endpoint_ = Url::parse(endpoint_text_);
    } catch (const std::invalid_argument& e) {
      throw PullError(std::string("HF_ENDPOINT: ") + e.what());
    }
    options_.connect_timeout = std::chrono::milliseconds(10'000);
    options_.read_timeout = std::chrono::milliseconds(60'000);
    options_.ca_file = std::move(ca_file);
    if (const char* token = std::getenv("HF_TOKEN"); token && *token) token_ = token;
  }

  int run() {
    const std::filesystem::path dir = model_dir();
    open_folder(dir);
    const std::filesystem::path final_path = dir / file_.local_name;
    const std::string part = file_.local_name + std::string(kPartSuffix);

    const std::string source = file_.repo + ":" + file_.file + "@" + file_.revision;
    if (source.starts_with(file_.name))
      std::fprintf(stderr, "pulling %s from %s\n", source.c_str(), endpoint_.origin().c_str());
    else
      std::fprintf(stderr, "pulling %s (%s) from %s\n", file_.name.c_str(), source.c_str(),
                   endpoint_.origin().c_str());
    Expected expected = metadata();

    struct stat st;
    if (::fstatat(dir_fd_->get(), file_.local_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode))
        throw PullError(final_path.string() +
                        " is not a plain file (a symbolic link?); refusing to write through it: "
                        "remove it and pull again");
      if (static_cast<uint64_t>(st.st_size) == expected.size && !expected.sha256.empty() &&
          hash_file(file_.local_name) == expected.sha256) {
        std::printf("%s is up to date: %s\n", file_.name.c_str(), final_path.c_str());
        return 0;
      }
    }

    download(part, expected);
    if (::renameat(dir_fd_->get(), part.c_str(), dir_fd_->get(), file_.local_name.c_str()) != 0)
      throw PullError("cannot rename " + part + " to " + final_path.string() + ": " +
                      std::strerror(errno));
    ::fsync(dir_fd_->get());
    std::printf("%s: %s (%s, SHA-256 checked)\n", file_.name.c_str(), final_path.c_str(),
                format_bytes(expected.size).c_str());
    std::printf("use it: ghostline serve --model %s\n", file_.name.c_str());
    return 0;
  }

 private:
  void open_folder(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw PullError("cannot create the model folder " + dir.string() + ": " + ec.message());
    dir_fd_ = std::make_unique<UniqueFd>(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd_->get() < 0)
      throw PullError("cannot open the model folder " + dir.string() + ": " + std::strerror(errno));
  }

  // Headers for a request to `to`: the token only to the hub itself, never to a host a
  // redirect names (the CDN needs none: its URL is signed).
  HttpClient::Headers headers_for(const Url& to, const HttpClient::Headers& extra) const {
    HttpClient::Headers h = extra;
    if (!token_.empty() && same_origin(to, endpoint_))
      h.emplace_back("Authorization", "Bearer " + token_);
    return h;
  }

  // GETs `start`, following redirects; `on_head` sees the final response's head and returns
  // whether to read its body into `on_body`. Every head on the way is shown to `observe`.
  ResponseHead fetch(Location loc, const HttpClient::Headers& extra,
                     const std::function<bool(const ResponseHead&)>& on_head,
                     const HttpClient::OnBody& on_body,
                     const std::function<void(const ResponseHead&)>& observe = nullptr) {
    for (int hop = 0;; ++hop) {
      HttpClient client(loc.origin, options_);
      ResponseHead seen;
      std::string redirect;
      try {
        client.get_stream(
            loc.target, headers_for(loc.origin, extra),
            [&](const ResponseHead& h) {
              seen = h;
              if (observe) observe(h);
              if (h.status >= 300 && h.status < 400 && !h.field("Location").empty()) {
                redirect = h.field("Location");
                return false;
              }
              return on_head(h);
            },
            on_body, nullptr);
      } catch (const HttpError& e) {
        if (e.connect_failure())
          throw PullError(std::string(e.what()) + " (no network? HF_ENDPOINT names a mirror)");
        throw;
      }
      if (redirect.empty()) return seen;
      if (hop + 1 >= kMaxRedirects)
        throw PullError("more than " + std::to_string(kMaxRedirects) + " redirects");
      Location next = follow(loc, redirect);
      if (loc.origin.tls && !next.origin.tls)
        throw PullError(loc.origin.origin() + " redirected to plain http (" + next.origin.origin() +
                        "); refusing to continue without TLS");
      loc = std::move(next);
    }
  }

  std::string hub_message(const ResponseHead& h) const {
    const std::string m = h.field("X-Error-Message");
    return m.empty() ? "" : " (\"" + m.substr(0, 200) + "\")";
  }

  [[noreturn]] void status_error(const ResponseHead& h, const std::string& what) const {
    const std::string hub = endpoint_.origin();
    if (h.status == 401 || h.status == 403)
      throw PullError(hub + " answered " + std::to_string(h.status) + " for " + what +
                      hub_message(h) +
                      ": a private or gated repository; accept its terms on the hub and set "
                      "HF_TOKEN to an access token" +
                      (token_.empty() ? "" : " (HF_TOKEN is set: it was refused)"));
    if (h.status == 404)
      throw PullError(what + " was not found at " + hub + " (404)" + hub_message(h) +
                      ": check the name" +
                      (token_.empty() ? ", or set HF_TOKEN if it is private" : ""));
    throw PullError(hub + " answered " + std::to_string(h.status) + " for " + what +
                    hub_message(h));
  }

  // GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true: the file's size and SHA-256.
  Expected metadata() {
    Location api{endpoint_,
                 "/api/models/" + file_.repo + "/revision/" + file_.revision + "?blobs=true"};
    std::string body;
    const ResponseHead head = fetch(
        api, {{"Accept", "application/json"}}, [](const ResponseHead&) { return true; },
        [&](std::string_view piece) {
          if (body.size() + piece.size() > kMaxMetadataBytes) return false;
          body.append(piece);
          return true;
        });
    const std::string what = file_.repo + " at revision " + file_.revision;
    if (head.status != 200) status_error(head, what);
    nlohmann::json info = nlohmann::json::parse(body, nullptr, false);
    if (info.is_discarded() || !info.is_object() || !info.contains("siblings") ||
        !info["siblings"].is_array())
      throw PullError(endpoint_.origin() + " gave no file list for " + what +
                      " (is HF_ENDPOINT a Hugging Face hub?)");
    std::string ggufs;
    for (const auto& s : info["siblings"]) {
      const std::string name = s.value("rfilename", "");
      if (name.ends_with(".gguf")) ggufs += "\n  " + file_.repo + ":" + name;
      if (name != file_.file) continue;
      Expected e;
      if (s.contains("lfs") && s["lfs"].is_object()) {
        e.size = s["lfs"].value("size", uint64_t{0});
        e.sha256 = s["lfs"].value("sha256", "");
      }
      if (e.size == 0) e.size = s.value("size", uint64_t{0});
      if (!e.sha256.empty() && !is_sha256(e.sha256))
        throw PullError("the hub's SHA-256 for " + file_.file + " is malformed");
      return e;
    }
    throw PullError(
        what + " has no file " + file_.file +
        (ggufs.empty() ? std::string(" (and no .gguf files)") : "; its GGUF files:" + ggufs));
  }

  // The SHA-256 of a file in the folder (opened without following links).
  std::string hash_file(const std::string& name) {
    UniqueFd fd(::openat(dir_fd_->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0) throw PullError("cannot read " + name + ": " + std::strerror(errno));
    Sha256 sha;
    hash_prefix(fd.get(), ~uint64_t{0}, sha);
    return sha.hex();
  }

  // Hashes the first `bytes` of `fd` (all of it when shorter); returns how many were read.
  uint64_t hash_prefix(int fd, uint64_t bytes, Sha256& sha) {
    std::string buf(1 << 20, '\0');
    uint64_t done = 0;
    while (done < bytes) {
      const ssize_t n = ::pread(fd, buf.data(), std::min<uint64_t>(buf.size(), bytes - done), done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw PullError(std::string("cannot read the partial download: ") + std::strerror(errno));
      if (n == 0) break;
      sha.update(std::string_view(buf.data(), n));
      done += n;
    }
    return done;
  }

  void write_all(int fd, std::string_view bytes, const std::string& path) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == ENOSPC || errno == EFBIG || errno == EDQUOT))
        throw PullError("no room to write " + path + " (" + std::strerror(errno) +
                        "): free some space, then run `ghostline pull " + file_.name +
                        "` again; the download resumes where it stopped");
      if (n < 0) throw PullError("cannot write " + path + ": " + std::strerror(errno));
      bytes.remove_prefix(n);
    }
  }

  void download(const std::string& part, Expected& expected) {
    const std::string part_path = (model_dir() / part).string();
    UniqueFd fd(
        ::openat(dir_fd_->get(), part.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd.get() < 0 && errno == ELOOP)
      throw PullError(
          part_path +
          " is a symbolic link; refusing to write through it: remove it and pull again");
    if (fd.get() < 0) throw PullError("cannot open " + part_path + ": " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
      throw PullError(part_path + " is not a plain file; remove it and pull again");

    Sha256 sha;
    uint64_t have = static_cast<uint64_t>(st.st_size);
    if (expected.size && have > expected.size) have = 0;
    if (have > 0) {
      std::fprintf(stderr, "resuming at %s of %s\n", format_bytes(have).c_str(),
                   format_bytes(expected.size).c_str());
      have = hash_prefix(fd.get(), have, sha);
    }
    if (::ftruncate(fd.get(), static_cast<off_t>(have)) != 0 ||
        ::lseek(fd.get(), static_cast<off_t>(have), SEEK_SET) < 0)
      throw PullError("cannot prepare " + part_path + ": " + std::strerror(errno));
    check_space(fd.get(), expected.size > have ? expected.size - have : 0, part_path);

    if (!expected.size || have < expected.size) {
      receive(fd.get(), part_path, have, sha, expected);
    }
    if (expected.sha256.empty())
      throw PullError("the hub gave no SHA-256 for " + file_.file +
                      "; the download cannot be checked");
    if (have != expected.size)
      throw PullError("the download of " + file_.name + " stopped at " + format_bytes(have) +
                      " of " + format_bytes(expected.size) + ": run `ghostline pull " + file_.name +
                      "` again to resume");
    const std::string got = sha.hex();
    if (got != expected.sha256) {
      ::unlinkat(dir_fd_->get(), part.c_str(), 0);
      throw PullError("checksum mismatch for " + file_.name + ": the hub says SHA-256 " +
                      expected.sha256 + ", the download has " + got +
                      "; the partial file was removed, run the "
                      "command again to download it anew");
    }
    if (::fsync(fd.get()) != 0)
      throw PullError("cannot write " + part_path + " to disk: " + std::strerror(errno));
  }

  void check_space(int fd, uint64_t needed, const std::string& path) {
    struct statvfs vfs;
    if (::fstatvfs(fd, &vfs) != 0) return;
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (needed > free_bytes)
      throw PullError("no room for " + file_.name + ": it needs " + format_bytes(needed) +
                      " more in " + std::filesystem::path(path).parent_path().string() +
                      ", which has " + format_bytes(free_bytes) + " free");
  }

  // Streams the file from the resolve URL into `fd` from byte `have`, which it advances.
  void receive(int fd, const std::string& path, uint64_t& have, Sha256& sha, Expected& expected) {
    const Location resolve{endpoint_, "/" + file_.repo + "/resolve/" + file_.revision + "/" +
                                          percent_encode_path(file_.file)};
    std::optional<Progress> progress;
    const bool terminal = ::isatty(STDERR_FILENO);
    auto start_over = [&] {
      if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) < 0)
        throw PullError("cannot truncate " + path + ": " + std::strerror(errno));
      have = 0;
      sha.reset();
    };
    // The hub's own answer (before the CDN's) names the blob: X-Linked-Size and X-Linked-Etag.
    auto observe = [&](const ResponseHead& h) {
      const std::string linked_size = h.field("X-Linked-Size");
      std::string etag = h.field("X-Linked-Etag");
      if (etag.size() >= 2 && etag.front() == '"') etag = etag.substr(1, etag.size() - 2);
      if (is_sha256(etag)) {
        if (expected.sha256.empty())
          expected.sha256 = etag;
        else if (etag != expected.sha256)
          throw PullError("the hub's metadata disagree on the SHA-256 of " + file_.file);
      }
      if (!linked_size.empty() && !expected.size)
        expected.size = std::strtoull(linked_size.c_str(), nullptr, 10);
    };

    for (int attempt = 0; attempt < 2; ++attempt) {
      HttpClient::Headers extra;
      if (have > 0) extra.emplace_back("Range", "bytes=" + std::to_string(have) + "-");
      bool retry_from_zero = false;
      auto on_head = [&](const ResponseHead& h) {
        if (h.status == 416 && have > 0) {  // the part is not a prefix the server knows
          retry_from_zero = true;
          return false;
        }
        if (h.status != 200 && h.status != 206) status_error(h, file_.repo + ":" + file_.file);
        if (!expected.size) throw PullError("the hub gave no size for " + file_.file);
        if (h.status == 206) {
          // Content-Range: bytes START-END/TOTAL
          const std::string range = h.field("Content-Range");
          unsigned long long first = 0, last = 0, total = 0;
          if (std::sscanf(range.c_str(), "bytes %llu-%llu/%llu", &first, &last, &total) != 3 ||
              first != have || total != expected.size)
            throw PullError("the server answered the range request for byte " +
                            std::to_string(have) + " with '" + range + "'");
        } else if (have > 0) {
          std::fprintf(stderr, "the server does not resume downloads; starting over\n");
          start_over();
        }
        if (h.status == 200) {
          const std::string length = h.field("Content-Length");
          if (!length.empty() && std::strtoull(length.c_str(), nullptr, 10) != expected.size)
            throw PullError("the server sends " + length + " bytes for " + file_.file +
                            ", the hub lists " + std::to_string(expected.size));
        }
        progress.emplace(expected.size, have, terminal);
        return true;
      };
      auto on_body = [&](std::string_view piece) {
        if (have + piece.size() > expected.size)
          throw PullError("the server sent more than the " + std::to_string(expected.size) +
                          " bytes the hub lists for " + file_.file);
        write_all(fd, piece, path);
        sha.update(piece);
        have += piece.size();
        progress->update(have);
        return true;
      };
      try {
        fetch(resolve, extra, on_head, on_body, observe);
      } catch (const HttpError& e) {
        if (progress) progress->finish(have);
        throw PullError(std::string("download interrupted at ") + format_bytes(have) + " of " +
                        format_bytes(expected.size) + ": " + e.what() + "; run `ghostline pull " +
                        file_.name + "` again to resume");
      }
      if (!retry_from_zero) {
        if (progress) progress->finish(have);
        return;
      }
      std::fprintf(stderr, "the server refused to resume at byte %llu; starting over\n",
                   static_cast<unsigned long long>(have));
      start_over();
    }
  }

  HubFile file_;
  std::string endpoint_text_;
  Url endpoint_;
  remote::HttpClientOptions options_;
  std::string token_;
  std::unique_ptr<UniqueFd> dir_fd_;
};

void print_list() {
  std::printf("%-20s %-9s %-7s %s\n", "NAME", "SIZE", "QUANT", "SUITS");
  std::filesystem::path dir;
  try {
    dir = model_dir();
  } catch (const std::exception&) {
  }
  for (const auto& m : recommended_models()) {
    char size[32];
    std::snprintf(size, sizeof size, m.bytes >= 1'000'000'000 ? "%.2f GB" : "%.0f MB",
                  m.bytes >= 1'000'000'000 ? m.bytes / 1e9 : m.bytes / 1e6);
    struct stat st;
    const bool pulled = !dir.empty() &&
                        ::lstat((dir / (std::string(m.name) + ".gguf")).c_str(), &st) == 0 &&
                        S_ISREG(st.st_mode);
    std::printf("%-20.*s %-9s %-7.*s %.*s%s\n", static_cast<int>(m.name.size()), m.name.data(),
                size, static_cast<int>(m.quant.size()), m.quant.data(),
                static_cast<int>(m.suits.size()), m.suits.data(), pulled ? "  [pulled]" : "");
    std::printf("%-20s %.*s:%.*s\n", "", static_cast<int>(m.repo.size()), m.repo.data(),
                static_cast<int>(m.file.size()), m.file.data());
  }
  std::printf("\nAny other GGUF on the hub: ghostline pull USER/REPO:FILE.gguf[@REVISION]\n");
  if (!dir.empty()) std::printf("Model folder: %s\n", dir.c_str());
}

}  // namespace

int pull_main(std::span<char* const> args) {
  std::string name;
  bool list = false;
  std::string ca_file;
  if (const char* env = std::getenv("GHOSTLINE_CA_FILE")) ca_file = env;
  ArgParser p(
      "ghostline pull",
      "Downloads a GGUF model from the Hugging Face hub into the model folder\n"
      "($GHOSTLINE_MODEL_DIR, else $XDG_CACHE_HOME/ghostline/models, else\n"
      "~/.cache/ghostline/models), where `--model NAME` finds it. An interrupted download\n"
      "resumes when run again. HF_TOKEN (for gated or private repositories) is sent to the\n"
      "hub only; HF_ENDPOINT names a mirror (default https://huggingface.co).");
  p.positional("NAME", "a recommended model (see --list) or USER/REPO:FILE.gguf[@REVISION]", &name,
               false);
  p.flag("--list", "print the recommended models with their size and the machines they suit",
         &list);
  p.option(
      "--ca-file", "FILE",
      "CA certificates (PEM) to trust for https besides the system's (default: $GHOSTLINE_CA_FILE)",
      &ca_file);
  if (auto exit = p.parse(args)) return *exit;
  if (list) {
    print_list();
    return 0;
  }
  if (name.empty()) {
    std::fprintf(
        stderr,
        "ghostline pull: name a model (ghostline pull --list shows the recommended ones)\n");
    return 2;
  }
  HubFile file;
  try {
    file = parse_model_name(name);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "ghostline pull: %s\n", e.what());
    return 2;
  }
  const char* endpoint = std::getenv("HF_ENDPOINT");
  return report_errors("pull", [&] {
    return Pull(file, endpoint && *endpoint ? endpoint : "https://huggingface.co", ca_file).run();
  });
}

}  // namespace ghostline::daemon
