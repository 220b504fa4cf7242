// Matmul kernels compiled for the AVX-VNNI level (the AVX2 kernels with vpdpbusd on 256-bit
// vectors for their integer dot products); only reached after a CPUID check.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/gguf/quant.h"

namespace ghostline::engine::cpu::kernels {
namespace {
#include "engine/backend/cpu/matmul_simd.inc"
}  // namespace

const KernelSet& avxvnni_kernels() {
  return level_kernels();
}

}  // namespace ghostline::engine::cpu::kernels
