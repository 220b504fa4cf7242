// Keeps the other users of a machine away from this user's daemon: the directory that holds its
// socket, log and TCP token ($XDG_RUNTIME_DIR, or /tmp/ghostline-UID made for it), the files in
// it, and the process at the other end of a unix socket. Every check looks at the path itself
// (lstat, O_NOFOLLOW): a symbolic link planted by someone else is never followed.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace ghostline::lsp {

// Who may use a private directory besides its owner: nobody (the /tmp directory Ghostline makes,
// mode exactly 0700), or readers only (XDG_RUNTIME_DIR, which its owner and the system set up).
enum class DirAccess { OwnerOnly, NotWritableByOthers };

struct PrivateDir {
  std::string path;
  DirAccess access;
  bool create_if_absent;  // only the /tmp directory is ours to make
};

// $XDG_RUNTIME_DIR when set and not empty, else /tmp/ghostline-UID. Neither made nor checked.
PrivateDir private_dir_for(const char* xdg_runtime_dir, uid_t uid);
PrivateDir default_private_dir();

// What makes `dir` unfit to hold `owner`'s sockets and secrets, as lstat sees it: it is missing,
// a symbolic link, not a directory, owned by another user, or open to group or others beyond
// what its DirAccess allows. nullopt when it is fit.
std::optional<std::string> private_dir_problem(const PrivateDir& dir, uid_t owner = ::geteuid());

// Makes `dir` (mode 0700) when it may be made and is absent, then checks it. Throws
// std::runtime_error "refusing to use the directory PATH: PROBLEM" when it is unfit.
void prepare_private_dir(const PrivateDir& dir);

// What stops a daemon of `owner` from binding a unix socket at `path`: a symbolic link, something
// that is not a socket, or a socket of another user. nullopt when nothing is there or the socket
// is `owner`'s (a live daemon or a stale one: the caller tells them apart by connecting).
std::optional<std::string> socket_path_problem(const std::string& path, uid_t owner = ::geteuid());

// An owned file descriptor, closed when it goes.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release();

 private:
  int fd_ = -1;
};

// Opens a log file for appending without following a symbolic link at `path`; a new file is
// made with mode 0600. An existing one must be a regular file of this user, or a character
// device (/dev/null). Throws std::runtime_error naming the path and the problem.
UniqueFd open_log_file(const std::string& path);

// Writes `secret` to a new file at `path`, mode 0600 (O_CREAT | O_EXCL | O_NOFOLLOW). A regular
// file of this user already there is a stale one and is replaced; anything else (a symbolic
// link, another user's file) is refused with std::runtime_error.
void write_secret_file(const std::string& path, const std::string& secret);

// The content of a secret file, without surrounding white space; nullopt when there is no file.
// The file must be a regular file of this user that no one else may read (checked on the open
// descriptor, never through a symbolic link); otherwise std::runtime_error.
std::optional<std::string> read_secret_file(const std::string& path);

// The effective user id of the process at the other end of a connected unix socket, as the
// kernel recorded it at connect/listen time (base/peer_credentials.h); nullopt with errno set on
// failure.
std::optional<uid_t> peer_uid(int socket_fd);

// Why the process at the other end of a unix socket connected at `path` must not be sent a
// byte (it runs as another user: a socket planted to read what the editor sends, or SO_PEERCRED
// failed), or nullopt when it runs as this user.
std::optional<std::string> unix_peer_problem(int socket_fd, const std::string& path);

// "alice (uid 1001)", or "uid 1001" for a user without a name.
std::string describe_user(uid_t uid);

}  // namespace ghostline::lsp
