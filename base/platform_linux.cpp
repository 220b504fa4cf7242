// platform.h on Linux: /proc for the executable, mlock under RLIMIT_MEMLOCK, madvise for pages.
#include "base/platform.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>

namespace ghostline::platform {

std::filesystem::path executable_path() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : path;
}

std::filesystem::path rerun_path() {
  return "/proc/self/exe";
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
    refusal.how_to_raise = "`ulimit -l unlimited` (or LimitMEMLOCK= in a systemd unit)";
  }
  return refusal;
}

void unlock_resident(const void* begin, size_t size) {
  ::munlock(begin, size);
}

void release_file_pages(const void* begin, size_t size) {
  // On a private file mapping MADV_DONTNEED drops the pages, anonymous copies included.
  ::madvise(const_cast<void*>(begin), size, MADV_DONTNEED);
}

void advise_huge_pages(void* begin, size_t size) {
  ::madvise(begin, size, MADV_HUGEPAGE);  // refused where transparent huge pages are off
}

}  // namespace ghostline::platform
