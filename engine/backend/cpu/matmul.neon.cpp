// aarch64 kernel level neon: ASIMD only (every aarch64 core has it). Built for aarch64 only
// (ghostline_isa_flags).
#if defined(__aarch64__)

#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/gguf/quant.h"

#define GHOSTLINE_NEON_SDOT 0
#include "engine/backend/cpu/matmul_neon.inc"

namespace ghostline::engine::cpu::kernels {

const KernelSet& neon_kernels() {
  static const KernelSet set = neon_kernel_set();
  return set;
}

}  // namespace ghostline::engine::cpu::kernels

#endif
