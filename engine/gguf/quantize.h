// Quantization of float rows into GGUF block formats, for writing model files (benchmarks,
// tests). Round to nearest with scales taken from each block's range and no importance
// weighting: simpler than llama-quantize's search for the best scales, so the error is
// somewhat larger, but every file reads back exactly through dequantize_row.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/gguf/ggml_type.h"

namespace ghostline::engine::gguf {

// Whether quantize_row writes `type`.
bool can_quantize(GgmlType type);

// Writes `n` floats (a whole number of the type's blocks) as ggml_row_bytes(type, n) bytes at
// `dst`. Throws std::invalid_argument for another type or a partial block.
void quantize_row(GgmlType type, const float* x, std::byte* dst, int64_t n);

}  // namespace ghostline::engine::gguf
