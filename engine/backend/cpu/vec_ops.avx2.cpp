// Vector operations compiled for the AVX2 level; only reached after a CPUID check.

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "engine/backend/cpu/vec_ops.h"

namespace ghostline::engine::cpu::vec_kernels {
namespace {
#include "engine/backend/cpu/vec_ops_simd.inc"
}  // namespace

const VecOps& avx2_vec_ops() {
  return kSimdVecOps;
}

}  // namespace ghostline::engine::cpu::vec_kernels
