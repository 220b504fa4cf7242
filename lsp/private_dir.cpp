#include "lsp/private_dir.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/peer_credentials.h"

namespace ghostline::lsp {

namespace {

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string link_target(const std::string& path) {
  std::vector<char> target(4096);
  const ssize_t n = ::readlink(path.c_str(), target.data(), target.size() - 1);
  return n < 0 ? std::string("?") : std::string(target.data(), static_cast<size_t>(n));
}

bool is_symlink(const std::string& path) {
  const int saved = errno;
  struct stat st;
  const bool link = ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
  errno = saved;
  return link;
}

std::string owned_by_other(const struct stat& st, uid_t owner) {
  return "it belongs to " + describe_user(st.st_uid) + ", not to this user, " +
         describe_user(owner);
}

std::string error_text(int error) {
  return std::strerror(error);
}

}  // namespace

PrivateDir private_dir_for(const char* xdg_runtime_dir, uid_t uid) {
  if (xdg_runtime_dir && *xdg_runtime_dir) {
    std::string path = xdg_runtime_dir;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return {path, DirAccess::NotWritableByOthers, false};
  }
  return {"/tmp/ghostline-" + std::to_string(uid), DirAccess::OwnerOnly, true};
}

PrivateDir default_private_dir() {
  return private_dir_for(std::getenv("XDG_RUNTIME_DIR"), ::getuid());
}

std::optional<std::string> private_dir_problem(const PrivateDir& dir, uid_t owner) {
  struct stat st;
  if (::lstat(dir.path.c_str(), &st) != 0)
    return errno == ENOENT ? std::string("it does not exist")
                           : "it cannot be examined (" + error_text(errno) + ")";
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link (to " + link_target(dir.path) + ")";
  if (!S_ISDIR(st.st_mode)) return std::string("it is not a directory");
  if (st.st_uid != owner) return owned_by_other(st, owner);
  if (dir.access == DirAccess::OwnerOnly && (st.st_mode & 0777) != 0700)
    return "it has mode " + mode_text(st.st_mode) +
           "; it must be 0700 (no access for group or others)";
  if (dir.access == DirAccess::NotWritableByOthers && (st.st_mode & 022) != 0)
    return "it has mode " + mode_text(st.st_mode) + ": group or others may write to it";
  return std::nullopt;
}

void prepare_private_dir(const PrivateDir& dir) {
  if (dir.create_if_absent && ::mkdir(dir.path.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot make the directory " + dir.path + ": " + error_text(errno));
  if (auto problem = private_dir_problem(dir)) {
    throw std::runtime_error("refusing to use the directory " + dir.path + ": " + *problem +
                             (dir.create_if_absent ? ". Another user may have made it to receive "
                                                     "this user's connections; remove it, or set "
                                                     "XDG_RUNTIME_DIR to a directory of this user"
                                                   : ". XDG_RUNTIME_DIR must name a directory of "
                                                     "this user that no one else may write to"));
  }
}

std::optional<std::string> socket_path_problem(const std::string& path, uid_t owner) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return errno == ENOENT
               ? std::nullopt
               : std::optional<std::string>("it cannot be examined (" + error_text(errno) + ")");
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link (to " + link_target(path) + ")";
  if (!S_ISSOCK(st.st_mode)) return std::string("it exists and is not a socket");
  if (st.st_uid != owner) return owned_by_other(st, owner);
  return std::nullopt;
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

int UniqueFd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

UniqueFd open_log_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader; it is refused below.
  UniqueFd fd(::open(path.c_str(),
                     O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                     0600));
  if (fd.get() < 0) {
    // O_NOFOLLOW fails with ELOOP, but O_CREAT on another user's link in a sticky directory can
    // fail with EACCES first: the link is named as the reason either way.
    if (errno == ELOOP || is_symlink(path))
      throw std::runtime_error("refusing to open the log file " + path +
                               ": it is a symbolic link (to " + link_target(path) + ")");
    if (errno == ENXIO)  // a FIFO without a reader, or a socket
      throw std::runtime_error("refusing to write the log file " + path +
                               ": it is not a regular file");
    throw std::runtime_error("cannot open the log file " + path + ": " + error_text(errno));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    throw std::runtime_error("cannot examine the log file " + path + ": " + error_text(errno));
  if (S_ISREG(st.st_mode) && st.st_uid != ::geteuid())
    throw std::runtime_error("refusing to write the log file " + path + ": " +
                             owned_by_other(st, ::geteuid()));
  if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
    throw std::runtime_error("refusing to write the log file " + path +
                             ": it is not a regular file");
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

void write_secret_file(const std::string& path, const std::string& secret) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      throw std::runtime_error("refusing to replace " + path + ": it is a symbolic link (to " +
                               link_target(path) + ")");
    if (!S_ISREG(st.st_mode))
      throw std::runtime_error("refusing to replace " + path + ": it is not a regular file");
    if (st.st_uid != ::geteuid())
      throw std::runtime_error("refusing to replace " + path + ": " +
                               owned_by_other(st, ::geteuid()));
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      throw std::runtime_error("cannot remove the stale " + path + ": " + error_text(errno));
  } else if (errno != ENOENT) {
    throw std::runtime_error("cannot examine " + path + ": " + error_text(errno));
  }
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) throw std::runtime_error("cannot create " + path + ": " + error_text(errno));
  const std::string content = secret + "\n";
  for (size_t off = 0; off < content.size();) {
    const ssize_t n = ::write(fd.get(), content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::unlink(path.c_str());
      throw std::runtime_error("cannot write " + path + ": " + error_text(error));
    }
    off += static_cast<size_t>(n);
  }
}

std::optional<std::string> read_secret_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ELOOP || is_symlink(path))
      throw std::runtime_error("refusing to read " + path + ": it is a symbolic link (to " +
                               link_target(path) + ")");
    throw std::runtime_error("cannot open " + path + ": " + error_text(errno));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    throw std::runtime_error("cannot examine " + path + ": " + error_text(errno));
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error("refusing to read " + path + ": it is not a regular file");
  if (st.st_uid != ::geteuid())
    throw std::runtime_error("refusing to read " + path + ": " + owned_by_other(st, ::geteuid()));
  if ((st.st_mode & 077) != 0)
    throw std::runtime_error("refusing to read " + path + ": it has mode " + mode_text(st.st_mode) +
                             "; a secret must be 0600 (no access for group or others)");
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("cannot read " + path + ": " + error_text(errno));
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > 64 * 1024)
      throw std::runtime_error("refusing to read " + path + ": it is too large");
  }
  const auto first = content.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return std::string();
  return content.substr(first, content.find_last_not_of(" \t\r\n") - first + 1);
}

std::optional<uid_t> peer_uid(int socket_fd) {
  return platform::unix_peer_uid(socket_fd);
}

std::optional<std::string> unix_peer_problem(int socket_fd, const std::string& path) {
  const auto uid = peer_uid(socket_fd);
  if (!uid)
    return "cannot tell who listens on " + path + " (" + platform::kPeerCredentialsMechanism +
           ": " + error_text(errno) + ")";
  if (*uid == ::geteuid()) return std::nullopt;
  return "the process listening on " + path + " runs as " + describe_user(*uid) +
         ", not as this user, " + describe_user(::geteuid()) +
         "; another user may have planted that socket to read what the editor sends";
}

std::string describe_user(uid_t uid) {
  struct passwd entry;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16 * 1024);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
      found->pw_name)
    return std::string(found->pw_name) + " (uid " + std::to_string(uid) + ")";
  return "uid " + std::to_string(uid);
}

}  // namespace ghostline::lsp
