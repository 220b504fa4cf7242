// Read-only access to a GGUF file (versions 2 and 3): metadata key/values and tensor
// descriptions, with tensor data served straight from a memory mapping of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/gguf/ggml_type.h"

namespace ghostline::engine {

// Every problem with a GGUF file (unreadable, corrupt, unsupported, or a metadata value of
// the wrong type) is reported as a GgufError whose message names the file and the problem.
class GgufError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

std::string_view gguf_value_type_name(GgufValueType type);

struct GgufTensor {
  std::string name;
  GgmlType type;
  std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous (row) dimension
  const std::byte* data;       // into the mapping
  size_t bytes;
  int64_t elements() const;
};

class GgufFile {
 public:
  // Maps the file read-only; throws GgufError naming the file and what is wrong.
  static std::unique_ptr<GgufFile> open(const std::filesystem::path& path);

  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  const std::filesystem::path& path() const { return path_; }
  size_t file_bytes() const { return size_; }
  // Offset of the tensor data section (tensor offsets are relative to it).
  size_t data_offset() const { return data_offset_; }

  // Typed metadata access. Each getter returns nullopt (or an empty vector) when the key is
  // absent and throws GgufError when the key holds a value of an incompatible type.
  bool has(std::string_view key) const;
  std::optional<GgufValueType> value_type(std::string_view key) const;
  // Element type and length when the key holds an array.
  std::optional<std::pair<GgufValueType, uint64_t>> array_info(std::string_view key) const;
  std::optional<std::string_view> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;   // any integer type or bool
  std::optional<double> get_float(std::string_view key) const;  // F32/F64 or integer
  std::optional<bool> get_bool(std::string_view key) const;
  std::vector<std::string_view> get_string_array(std::string_view key) const;  // views into the map
  std::vector<int64_t> get_int_array(std::string_view key) const;  // integer or bool elements
  std::vector<float> get_float_array(std::string_view key) const;  // float or integer elements

  // All metadata in file order, for display (`model-info`): key, type, and a short rendering
  // (arrays shown as type and length plus the first few values). For non-arrays,
  // array_type equals type and array_length is 0.
  struct MetadataEntry {
    std::string key;
    GgufValueType type;
    GgufValueType array_type;
    uint64_t array_length;
    std::string rendered;
  };
  const std::vector<MetadataEntry>& metadata() const { return metadata_; }

  const GgufTensor* tensor(std::string_view name) const;  // nullptr when absent
  const std::vector<GgufTensor>& tensors() const { return tensors_; }

  // Keeps the tensor data resident (mlock of the mapping; the machines reclaim idle file
  // pages). Returns an empty string on success, else a warning a user can act on. When mlock
  // is refused, the pages are copied into private anonymous memory in place (pointers stay
  // valid), which the reclaimer cannot drop without swap.
  std::string lock_resident();

  // Whether lock_resident locked the mapping (rather than failing or copying the data).
  bool locked() const;

  // Drops the pages that lie wholly inside [p, p + n) from this process's memory, for data
  // that has been copied elsewhere: a later read maps them from the file again. Pages that
  // lock_resident locked are unlocked first; where it copied them into anonymous memory
  // instead, the copies are dropped (the mapping is private, so the file's pages come back).
  void release(const std::byte* p, size_t n) const;

 private:
  // Where a metadata value lies in the mapping.
  struct RawValue {
    GgufValueType type;
    GgufValueType array_type;  // element type for arrays, else == type
    uint64_t count;            // array length, 0 for scalars
    size_t offset;             // payload (first element for arrays)
  };

  class Mapping;
  class Parser;

  GgufFile() = default;
  const RawValue* find(std::string_view key) const;
  [[noreturn]] void type_error(std::string_view key, const RawValue& v,
                               std::string_view want) const;

  std::filesystem::path path_;
  std::unique_ptr<Mapping> mapping_;
  const std::byte* base_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<RawValue> values_;  // parallel to metadata_
  std::vector<MetadataEntry> metadata_;
  std::unordered_map<std::string_view, size_t> key_index_;  // keys view into the mapping
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;  // names view into the mapping
};

}  // namespace ghostline::engine
