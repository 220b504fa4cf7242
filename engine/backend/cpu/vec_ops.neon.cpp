// Vector operations compiled for aarch64 (ASIMD, which every aarch64 core has): the kernels of
// vec_ops_simd.inc on 128-bit vectors. Built for aarch64 only (ghostline_isa_flags).
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/backend/cpu/vec_ops.h"

namespace ghostline::engine::cpu::vec_kernels {
namespace {
#include "engine/backend/cpu/vec_ops_simd.inc"
}  // namespace

const VecOps& neon_vec_ops() {
  return kSimdVecOps;
}

}  // namespace ghostline::engine::cpu::vec_kernels

#endif
