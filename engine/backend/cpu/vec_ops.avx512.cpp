// Vector operations compiled for the AVX512 level; only reached after a CPUID check.
// GCC 12 flags the deliberately undefined vectors inside its own AVX-512 intrinsics
// (_mm512_undefined_*) as uninitialized: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "engine/backend/cpu/vec_ops.h"

namespace ghostline::engine::cpu::vec_kernels {
namespace {
#include "engine/backend/cpu/vec_ops_simd.inc"
}  // namespace

const VecOps& avx512_vec_ops() {
  return kSimdVecOps;
}

}  // namespace ghostline::engine::cpu::vec_kernels
