// Matmul kernels compiled for the AVX512 level (512-bit floats, VNNI integer dots); only reached
// after a CPUID check.
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
// Helpers of every concern below.
#include "engine/backend/cpu/matmul_simd_common.inc"
// Decode of the file's rows.
#include "engine/backend/cpu/matmul_decode.inc"
// Its one-token and row-group kernels with 512-bit VNNI.
#include "engine/backend/cpu/matmul_decode_vnni512.inc"
// Decode of packed weights, 16 rows to a vector.
#include "engine/backend/cpu/matmul_packed512.inc"
// KernelSet::decode_rows over the above.
#include "engine/backend/cpu/matmul_decode_rows.inc"
// Float prefill.
#include "engine/backend/cpu/matmul_prefill_f32.inc"
// Int8 prefill: the shared layout,
#include "engine/backend/cpu/matmul_prefill_int8.inc"
// the kernels with 512-bit VNNI,
#include "engine/backend/cpu/matmul_prefill_int8_512.inc"
// and the panel loop.
#include "engine/backend/cpu/matmul_prefill_int8_panels.inc"
}  // namespace

const KernelSet& avx512_kernels() {
  static const KernelSet set{
      kPanelRows,           kPrefillTokens,  kScratchFloats, decode_rows, prefill_panels,
      /*quads=*/true,       kQ8Tokens,       q8_group,       pack_q8,     prefill_q8_panels,
      q8_scratch_floats,    quantize_blocks,
      /*reads_packed=*/true};
  return set;
}

}  // namespace ghostline::engine::cpu::kernels
