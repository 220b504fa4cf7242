// Tensor element types of the GGUF format (numbering as in ggml) and their block layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ghostline::engine {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
};

// Layout of one type: `block_elems` consecutive values are stored in `block_bytes` bytes.
struct GgmlTypeTraits {
  std::string_view name;
  int64_t block_elems;
  size_t block_bytes;
  bool supported;  // whether Ghostline's backends can compute with it
};

// Values per scale of the 8-bit activations that weights of `type` meet in integer dot products:
// the type's block of 32 values, or its super-block of 256 (the K-quants, IQ4_XS); 0 for types
// multiplied as floats.
constexpr int int8_activation_block(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::IQ4_NL:
      return 32;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::IQ4_XS:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return 256;
    default:
      return 0;
  }
}

// Traits of a type id read from a file; nullopt for ids this build does not know.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
const GgmlTypeTraits& ggml_type_traits(GgmlType type);

inline std::string_view ggml_type_name(GgmlType type) { return ggml_type_traits(type).name; }

// Bytes of a row of `n` elements; n must be a multiple of the block size.
inline size_t ggml_row_bytes(GgmlType type, int64_t n) {
  const auto& t = ggml_type_traits(type);
  return static_cast<size_t>(n / t.block_elems) * t.block_bytes;
}

}  // namespace ghostline::engine
