// A mapped file that shrinks while in use (truncated in place) makes every read of a page past
// its new end fault (SIGBUS on Linux), which ends the process without a word. Mappings register
// here; once the handler is installed, such a fault ends the process with a message naming the
// file and the exit code kMappedFileChangedExit. A fault anywhere else keeps its default action.
// The signal itself is caught by base/bus_fault.h, where the system offers a way.
#pragma once

#include <cstddef>
#include <filesystem>

namespace ghostline::engine {

inline constexpr int kMappedFileChangedExit = 3;

// Process-wide; the daemon installs it once, before it loads a model. False where the system
// offers no way to catch the fault: it then ends the process without the message.
bool install_mapped_file_fault_handler();

// While alive, a fault in [begin, begin + size) is reported as a change to `path`. The message
// is written now: the signal handler may only copy bytes out.
class MappedFileGuard {
 public:
  MappedFileGuard(const void* begin, size_t size, const std::filesystem::path& path);
  ~MappedFileGuard();
  MappedFileGuard(const MappedFileGuard&) = delete;
  MappedFileGuard& operator=(const MappedFileGuard&) = delete;

 private:
  int slot_ = -1;  // -1: every slot was taken, the default action applies
};

}  // namespace ghostline::engine
