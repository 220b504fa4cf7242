#include "engine/gguf/ggml_type.h"

#include <array>
#include <stdexcept>
#include <string>

namespace ghostline::engine {
namespace {

constexpr uint32_t kTypeCount = 31;

// Block sizes as the GGUF format defines them; K-quants use super-blocks of 256 values.
constexpr std::array<GgmlTypeTraits, kTypeCount> kTraits = {{
    {"F32", 1, 4, true},        // 0
    {"F16", 1, 2, true},        // 1
    {"Q4_0", 32, 18, true},     // 2
    {"Q4_1", 32, 20, true},     // 3
    {"", 0, 0, false},          // 4 (removed Q4_2)
    {"", 0, 0, false},          // 5 (removed Q4_3)
    {"Q5_0", 32, 22, true},     // 6
    {"Q5_1", 32, 24, true},     // 7
    {"Q8_0", 32, 34, true},     // 8
    {"Q8_1", 32, 36, false},    // 9
    {"Q2_K", 256, 84, true},    // 10
    {"Q3_K", 256, 110, true},   // 11
    {"Q4_K", 256, 144, true},   // 12
    {"Q5_K", 256, 176, true},   // 13
    {"Q6_K", 256, 210, true},   // 14
    {"Q8_K", 256, 292, false},  // 15
    {"IQ2_XXS", 256, 66, false}, {"IQ2_XS", 256, 74, false}, {"IQ3_XXS", 256, 98, false},
    {"IQ1_S", 256, 50, false},   {"IQ4_NL", 32, 18, true},   {"IQ3_S", 256, 110, false},
    {"IQ2_S", 256, 82, false},   {"IQ4_XS", 256, 136, true}, {"I8", 1, 1, false},
    {"I16", 1, 2, false},        {"I32", 1, 4, false},       {"I64", 1, 8, false},
    {"F64", 1, 8, false},        {"IQ1_M", 256, 56, false},  {"BF16", 1, 2, true},  // 30
}};

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  if (type_id >= kTypeCount || kTraits[type_id].block_elems == 0) return std::nullopt;
  return kTraits[type_id];
}

const GgmlTypeTraits& ggml_type_traits(GgmlType type) {
  auto id = static_cast<uint32_t>(type);
  if (id >= kTypeCount || kTraits[id].block_elems == 0)
    throw std::invalid_argument("unknown ggml type id " + std::to_string(id));
  return kTraits[id];
}

}  // namespace ghostline::engine
