// platform.h on Linux (beside platform_posix.cpp): /proc for the executable, madvise for pages.
#include "base/platform.h"
#include "base/platform_posix.h"

#include <sys/mman.h>

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

const char* memlock_limit_hint() {
  return "`ulimit -l unlimited` (or LimitMEMLOCK= in a systemd unit)";
}

void release_file_pages(const void* begin, size_t size) {
  // On a private file mapping MADV_DONTNEED drops the pages, anonymous copies included.
  ::madvise(const_cast<void*>(begin), size, MADV_DONTNEED);
}

void advise_huge_pages(void* begin, size_t size) {
  ::madvise(begin, size, MADV_HUGEPAGE);  // refused where transparent huge pages are off
}

}  // namespace ghostline::platform
