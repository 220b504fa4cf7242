// What the engine and the daemon ask of the operating system about the process and its memory.
// platform_posix.cpp implements what POSIX covers alike everywhere (page size, locking); one
// file per system the rest (platform_linux.cpp; platform_other.cpp does without).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace ghostline::platform {

// The running executable's absolute path, or an empty path where the system cannot tell (the
// callers then do without what lies beside the executable).
std::filesystem::path executable_path();

// A path that runs this executable again (exec): the very file this process runs where the
// system can name it, even when it has been replaced since; else executable_path().
std::filesystem::path rerun_path();

// Bytes in a page of memory: the unit of locking and releasing below.
size_t page_size();

// Why lock_resident failed, in parts the caller puts into its own sentence.
struct LockRefusal {
  std::string error;                  // the call and the system's error, e.g. "mlock: ..."
  std::optional<size_t> limit_bytes;  // the locked-memory limit in force, when there is one
  std::string how_to_raise;           // what raises that limit, when it is known
};

// Keeps [begin, begin + size) resident (mlock): nullopt when it is, else why not.
std::optional<LockRefusal> lock_resident(const void* begin, size_t size);

// Undoes lock_resident for whole pages of a locked range.
void unlock_resident(const void* begin, size_t size);

// Gives back whole pages of a private file mapping: the file backs them again, so they read the
// same, and copies made by writing to them are dropped. Where the system cannot drop them at
// once it is advice only.
void release_file_pages(const void* begin, size_t size);

// Asks for huge pages under an anonymous range (fewer TLB misses when a kernel streams through
// it). Advice: refused, or not offered at all, on some systems, and nothing changes then.
void advise_huge_pages(void* begin, size_t size);

}  // namespace ghostline::platform
