// platform.h on a system without a file of its own (beside platform_posix.cpp): POSIX calls
// only, and without what POSIX does not offer (the executable's path, huge pages, dropping a
// private page's copy at once).
#include "base/platform.h"
#include "base/platform_posix.h"

#include <sys/mman.h>

namespace ghostline::platform {

// POSIX has no way to ask; callers do without what lies beside the executable.
std::filesystem::path executable_path() {
  return {};
}

std::filesystem::path rerun_path() {
  return executable_path();
}

const char* memlock_limit_hint() {
  return "`ulimit -l`";
}

// Advice only: the pages may stay resident until the system wants them.
void release_file_pages(const void* begin, size_t size) {
  ::posix_madvise(const_cast<void*>(begin), size, POSIX_MADV_DONTNEED);
}

// No portable way to ask for huge pages: the range keeps the system's page size.
void advise_huge_pages(void*, size_t) {}

}  // namespace ghostline::platform
