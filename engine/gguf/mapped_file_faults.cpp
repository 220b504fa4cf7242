#include "engine/gguf/mapped_file_faults.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "base/bus_fault.h"

namespace ghostline::engine {
namespace {

// A model and a draft at a time, a few more while tests open files: fixed slots, so the
// handler reads them without locks or allocation.
constexpr size_t kSlots = 16;
constexpr size_t kMessageBytes = 4352;  // PATH_MAX and the sentence around it

struct Slot {
  std::atomic<uintptr_t> begin{0};  // 0: free; published last, cleared first
  std::atomic<uintptr_t> end{0};
  size_t message_size = 0;
  std::array<char, kMessageBytes> message{};
};

std::array<Slot, kSlots> slots;
std::mutex slots_mutex;  // between registrations; the handler takes no lock

// Inside the fault's signal handler: no locks, no allocation.
void report_mapped_file_fault(const void* address_pointer) {
  const auto address = reinterpret_cast<uintptr_t>(address_pointer);
  for (const Slot& s : slots) {
    const uintptr_t begin = s.begin.load(std::memory_order_acquire);
    if (begin != 0 && address >= begin && address < s.end.load(std::memory_order_relaxed)) {
      ssize_t ignored = ::write(STDERR_FILENO, s.message.data(), s.message_size);
      (void)ignored;
      ::_exit(kMappedFileChangedExit);
    }
  }
}

}  // namespace

bool install_mapped_file_fault_handler() {
  return platform::install_bus_fault_reporter(report_mapped_file_fault);
}

MappedFileGuard::MappedFileGuard(const void* begin, size_t size,
                                 const std::filesystem::path& path) {
  if (!begin || size == 0) return;
  std::string message = "ghostline: the model file " + path.string() +
                        " was truncated or changed while in use; restart the daemon\n";
  if (message.size() > kMessageBytes) message = message.substr(message.size() - kMessageBytes);
  std::lock_guard lock(slots_mutex);
  for (size_t i = 0; i < kSlots; ++i) {
    Slot& s = slots[i];
    if (s.begin.load(std::memory_order_relaxed) != 0) continue;
    message.copy(s.message.data(), message.size());
    s.message_size = message.size();
    const auto b = reinterpret_cast<uintptr_t>(begin);
    s.end.store(b + size, std::memory_order_relaxed);
    s.begin.store(b, std::memory_order_release);
    slot_ = static_cast<int>(i);
    return;
  }
}

MappedFileGuard::~MappedFileGuard() {
  if (slot_ < 0) return;
  std::lock_guard lock(slots_mutex);
  slots[static_cast<size_t>(slot_)].begin.store(0, std::memory_order_release);
}

}  // namespace ghostline::engine
