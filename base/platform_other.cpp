// platform.h on a system without a file of its own: POSIX calls only, and without what POSIX
// does not offer (the executable's path, huge pages, dropping a private page's copy at once).
#include "base/platform.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ghostline::platform {

// POSIX has no way to ask; callers do without what lies beside the executable.
std::filesystem::path executable_path() {
  return {};
}

std::filesystem::path rerun_path() {
  return executable_path();
}

size_t page_size() {
  return static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

std::optional<LockRefusal> lock_resident(const void* begin, size_t size) {
  if (::mlock(begin, size) == 0) return std::nullopt;
  LockRefusal refusal;
  refusal.error = std::string("mlock: ") + std::strerror(errno);
  rlimit lim{};
  if (::getrlimit(RLIMIT_MEMLOCK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    refusal.limit_bytes = static_cast<size_t>(lim.rlim_cur);
    refusal.how_to_raise = "`ulimit -l`";
  }
  return refusal;
}

void unlock_resident(const void* begin, size_t size) {
  ::munlock(begin, size);
}

// Advice only: the pages may stay resident until the system wants them.
void release_file_pages(const void* begin, size_t size) {
  ::posix_madvise(const_cast<void*>(begin), size, POSIX_MADV_DONTNEED);
}

// No portable way to ask for huge pages: the range keeps the system's page size.
void advise_huge_pages(void*, size_t) {}

}  // namespace ghostline::platform
