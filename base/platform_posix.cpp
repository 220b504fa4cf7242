// The parts of platform.h that POSIX covers on every system that has it: the page size and
// keeping pages resident (mlock under RLIMIT_MEMLOCK).
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/platform.h"
#include "base/platform_posix.h"

namespace ghostline::platform {

size_t page_size() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

std::optional<LockRefusal> lock_resident(const void* begin, size_t size) {
  if (::mlock(begin, size) == 0) return std::nullopt;
  LockRefusal refusal;
  refusal.error = std::string("mlock: ") + std::strerror(errno);
  rlimit lim{};
  if (::getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    refusal.limit_bytes = static_cast<size_t>(lim.rlim_cur);
    refusal.how_to_raise = memlock_limit_hint();
  }
  return refusal;
}

void unlock_resident(const void* begin, size_t size) { ::munlock(begin, size); }

}  // namespace ghostline::platform
