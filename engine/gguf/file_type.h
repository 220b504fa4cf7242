// llama.cpp's `general.file_type`: the quantization preset a whole file was made with (Q4_K_M
// names a mix of types), as llama-quantize writes it and llama-bench prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/gguf/ggml_type.h"

namespace ghostline::engine {

// The preset's name ("Q4_K_M"), or nullopt for a value this build does not know.
std::optional<std::string_view> file_type_name(int64_t file_type);
// The value of a file whose matrices are all of `type` (nullopt where llama.cpp has none), and
// of llama-quantize's Q4_K_M and Q5_K_M mixes.
std::optional<int64_t> file_type_of(GgmlType type);
inline constexpr int64_t kFileTypeQ4_K_M = 15;
inline constexpr int64_t kFileTypeQ5_K_M = 17;

}  // namespace ghostline::engine
