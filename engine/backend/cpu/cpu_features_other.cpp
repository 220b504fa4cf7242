// CPU feature detection where no platform file applies: no optional features, so the portable
// kernels run. A new platform (macOS on arm64: sysctlbyname "hw.optional.arm.FEAT_DotProd")
// adds its own file and narrows the condition below.
#if !(defined(__x86_64__) || defined(__i386__)) && !(defined(__aarch64__) && defined(__linux__))

#include "engine/backend/cpu/cpu_features.h"

namespace ghostline::engine::cpu {

CpuFeatures detect_cpu_features() {
  return {};
}

}  // namespace ghostline::engine::cpu

#endif
