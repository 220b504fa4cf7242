#include "lsp/socket_client.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ghostline::lsp {

int connect_to(const ListenAddress& a) {
  if (a.kind == ListenAddress::Kind::Unix) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (a.path.size() >= sizeof(addr.sun_path)) {
      errno = ENAMETOOLONG;
      return -1;
    }
    std::memcpy(addr.sun_path, a.path.c_str(), a.path.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(a.host.c_str(), std::to_string(a.port).c_str(), &hints, &res) != 0) {
    errno = EHOSTUNREACH;
    return -1;
  }
  int fd = -1;
  for (auto* p = res; p; p = p->ai_next) {
    fd = ::socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, p->ai_addr, p->ai_addrlen) == 0) break;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  return fd;
}

}  // namespace ghostline::lsp
