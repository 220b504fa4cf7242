// The GGUF loader on arbitrary bytes: it must either load the file, with every metadata value
// and tensor inside the mapping, or throw GgufError; never read out of bounds or crash. A file
// that loads is then given to the tokenizer loader, which must accept or refuse it cleanly.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "fuzz_check.h"

using ghostline::engine::GgufError;
using ghostline::engine::GgufFile;
using ghostline::engine::GgufValueType;

namespace {

// The bytes as a file the loader can map, without touching the disk.
class MemoryFile {
 public:
  MemoryFile(const uint8_t* data, size_t size) : fd_(::memfd_create("gguf", MFD_CLOEXEC)) {
    FUZZ_CHECK(fd_ >= 0, "memfd_create failed");
    for (size_t off = 0; off < size;) {
      ssize_t n = ::write(fd_, data + off, size - off);
      FUZZ_CHECK(n > 0, "write to memfd failed");
      off += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

void read_everything(const GgufFile& f) {
  for (const auto& m : f.metadata()) {
    try {
      switch (m.type) {
        case GgufValueType::STRING: (void)f.get_string(m.key); break;
        case GgufValueType::F32:
        case GgufValueType::F64: (void)f.get_float(m.key); break;
        case GgufValueType::ARRAY:
          if (m.array_type == GgufValueType::STRING) {
            for (auto s : f.get_string_array(m.key)) {
              FUZZ_CHECK(s.size() <= f.file_bytes(), "a string longer than the file");
              if (!s.empty()) {
                volatile char first = s.front(), last = s.back();
                (void)first;
                (void)last;
              }
            }
          } else if (m.array_type == GgufValueType::F32 || m.array_type == GgufValueType::F64) {
            (void)f.get_float_array(m.key);
          } else if (m.array_type != GgufValueType::ARRAY) {
            (void)f.get_int_array(m.key);
          }
          break;
        default: (void)f.get_int(m.key); break;
      }
    } catch (const GgufError&) {
      // A value of a type the getter does not convert: reported, as documented.
    }
  }
  for (const auto& t : f.tensors()) {
    FUZZ_CHECK(f.tensor(t.name) != nullptr, "tensor %s not found by name", t.name.c_str());
    if (t.bytes > 0) {
      // The whole tensor lies inside the file: touch its first and last byte.
      volatile std::byte first = t.data[0], last = t.data[t.bytes - 1];
      (void)first;
      (void)last;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  MemoryFile file(data, size);
  std::unique_ptr<GgufFile> gguf;
  try {
    gguf = GgufFile::open(file.path());
  } catch (const GgufError&) {
    return 0;
  }
  read_everything(*gguf);
  try {
    auto tokenizer = ghostline::engine::Tokenizer::from_gguf(*gguf);
    auto ids = tokenizer->encode("def f(x):\n    return x");
    for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < tokenizer->n_vocab(), "token id %d", id);
    (void)tokenizer->decode(ids);
  } catch (const std::runtime_error&) {
    // A missing or unsupported vocabulary is refused with a message.
  }
  return 0;
}
