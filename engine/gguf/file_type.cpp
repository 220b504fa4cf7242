#include "engine/gguf/file_type.h"

#include <utility>

namespace ghostline::engine {
namespace {

// llama.h's enum llama_ftype (the values are part of the file format).
struct Row {
  int64_t value;
  std::string_view name;
  std::optional<GgmlType> type;  // the type of all matrices, for the single-type presets
};
constexpr Row kRows[] = {
    {0, "F32", GgmlType::F32},       {1, "F16", GgmlType::F16},      {2, "Q4_0", GgmlType::Q4_0},
    {3, "Q4_1", GgmlType::Q4_1},     {7, "Q8_0", GgmlType::Q8_0},    {8, "Q5_0", GgmlType::Q5_0},
    {9, "Q5_1", GgmlType::Q5_1},     {10, "Q2_K", GgmlType::Q2_K},   {11, "Q3_K_S", GgmlType::Q3_K},
    {12, "Q3_K_M", std::nullopt},    {13, "Q3_K_L", std::nullopt},   {14, "Q4_K_S", GgmlType::Q4_K},
    {15, "Q4_K_M", std::nullopt},    {16, "Q5_K_S", GgmlType::Q5_K}, {17, "Q5_K_M", std::nullopt},
    {18, "Q6_K", GgmlType::Q6_K},    {19, "IQ2_XXS", std::nullopt},  {20, "IQ2_XS", std::nullopt},
    {21, "Q2_K_S", std::nullopt},    {22, "IQ3_XS", std::nullopt},   {23, "IQ3_XXS", std::nullopt},
    {24, "IQ1_S", std::nullopt},     {25, "IQ4_NL", GgmlType::IQ4_NL}, {26, "IQ3_S", std::nullopt},
    {27, "IQ3_M", std::nullopt},     {28, "IQ2_S", std::nullopt},    {29, "IQ2_M", std::nullopt},
    {30, "IQ4_XS", GgmlType::IQ4_XS}, {31, "IQ1_M", std::nullopt},   {32, "BF16", GgmlType::BF16},
};

}  // namespace

std::optional<std::string_view> file_type_name(int64_t file_type) {
  for (const Row& r : kRows)
    if (r.value == file_type) return r.name;
  return std::nullopt;
}

std::optional<int64_t> file_type_of(GgmlType type) {
  for (const Row& r : kRows)
    if (r.type == type) return r.value;
  return std::nullopt;
}

}  // namespace ghostline::engine
