// aarch64 kernel level neondot: ASIMD with the dot-product instructions (sdot), compiled with
// +dotprod and called only when HWCAP reports them: the NEON decode with sdot, and the int8
// prefill. Built for aarch64 only (ghostline_isa_flags).
#if defined(__aarch64__)

#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/gguf/quant.h"

#define GHOSTLINE_NEON_SDOT 1
#include "engine/backend/cpu/matmul_neon.inc"
#include "engine/backend/cpu/matmul_prefill_int8_neon.inc"

namespace ghostline::engine::cpu::kernels {

const KernelSet& neondot_kernels() {
  static const KernelSet set = [] {
    KernelSet s = neon_kernel_set();
    add_q8_prefill(s);
    return s;
  }();
  return set;
}

}  // namespace ghostline::engine::cpu::kernels

#endif
