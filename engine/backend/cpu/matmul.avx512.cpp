// Matmul kernels compiled for the AVX512 level; only reached after a CPUID check.
// GCC 12 flags the deliberately undefined vectors inside its own AVX-512 intrinsics
// (_mm512_undefined_*) as uninitialized: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/gguf/quant.h"

namespace ghostline::engine::cpu::kernels {
namespace {
#include "engine/backend/cpu/matmul_simd.inc"
}  // namespace

const KernelSet& avx512_kernels() {
  static const KernelSet set{kPanelRows,     kPrefillTokens,    kScratchFloats,    decode_rows,
                             prefill_panels, /*quads=*/true,    kQ8Tokens,         q8_group,
                             pack_q8,        prefill_q8_panels, q8_scratch_floats, quantize_blocks,
                             packed_type};
  return set;
}

}  // namespace ghostline::engine::cpu::kernels
