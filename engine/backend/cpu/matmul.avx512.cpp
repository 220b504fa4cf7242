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
  return level_kernels();
}

}  // namespace ghostline::engine::cpu::kernels
