// Matmul kernels compiled for the AVX2 level; only reached after a CPUID check.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/gguf/quant.h"

namespace ghostline::engine::cpu::kernels {
namespace {
#include "engine/backend/cpu/matmul_simd.inc"
}  // namespace

const KernelSet& avx2_kernels() {
  return level_kernels();
}

}  // namespace ghostline::engine::cpu::kernels
