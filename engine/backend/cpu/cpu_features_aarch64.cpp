// CPU feature detection on aarch64 Linux: the HWCAP bits the kernel passes in the auxiliary
// vector (user space cannot read the ID registers directly on every kernel).
#if defined(__aarch64__) && defined(__linux__)

#include <asm/hwcap.h>
#include <sys/auxv.h>

#include "engine/backend/cpu/cpu_features.h"

namespace ghostline::engine::cpu {

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  f.asimd = hwcap & HWCAP_ASIMD;
  f.asimd_dotprod = hwcap & HWCAP_ASIMDDP;
  f.fp16 = (hwcap & HWCAP_FPHP) && (hwcap & HWCAP_ASIMDHP);
  f.sve = hwcap & HWCAP_SVE;
#ifdef HWCAP2_I8MM
  f.i8mm = hwcap2 & HWCAP2_I8MM;
#else
  f.i8mm = hwcap2 & (1ul << 13);  // HWCAP2_I8MM, for kernel headers older than Linux 5.10
#endif
  return f;
}

}  // namespace ghostline::engine::cpu

#endif
