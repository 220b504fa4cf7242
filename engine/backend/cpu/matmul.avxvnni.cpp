// Matmul kernels compiled for the AVX-VNNI level (the AVX2 kernels with vpdpbusd on 256-bit
// vectors for their integer dot products); only reached after a CPUID check.
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
// Decode of packed weights, 8 rows to a vector.
#include "engine/backend/cpu/matmul_packed256.inc"
// KernelSet::decode_rows over the above.
#include "engine/backend/cpu/matmul_decode_rows.inc"
// Float prefill.
#include "engine/backend/cpu/matmul_prefill_f32.inc"
// Int8 prefill: the shared layout,
#include "engine/backend/cpu/matmul_prefill_int8.inc"
// the kernels with 256-bit vectors,
#include "engine/backend/cpu/matmul_prefill_int8_256.inc"
// and the panel loop.
#include "engine/backend/cpu/matmul_prefill_int8_panels.inc"
}  // namespace

const KernelSet& avxvnni_kernels() {
  static const KernelSet set{
      kPanelRows,           kPrefillTokens, kScratchFloats, decode_rows, prefill_panels,
      /*quads=*/false,      kQ8Tokens,      q8_group,       pack_q8,     prefill_q8_panels,
      q8_scratch_floats,    quantize_blocks_256,
      /*reads_packed=*/true};
  return set;
}

}  // namespace ghostline::engine::cpu::kernels
