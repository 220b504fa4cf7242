// Run-time CPU feature detection and the choice of kernel instruction set.
#pragma once

#include <optional>
#include <string>
#include <string_view>

// Whether this target builds the x86 kernel levels (the *.avx2/avxvnni/avx512.cpp files).
#if defined(__x86_64__) || defined(__i386__)
#define GHOSTLINE_X86_KERNELS 1
#else
#define GHOSTLINE_X86_KERNELS 0
#endif
// Whether this target builds the aarch64 kernel levels (the *.neon.cpp files).
#if defined(__aarch64__)
#define GHOSTLINE_NEON_KERNELS 1
#else
#define GHOSTLINE_NEON_KERNELS 0
#endif

namespace ghostline::engine::cpu {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx_vnni = false;
  // Reported for information only: some virtual machines advertise AMX without granting the
  // tile state, so no kernel uses it.
  bool amx_tile = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;
  // aarch64 (Linux: getauxval HWCAP); reported for information until a NEON level uses them.
  bool asimd = false;
  bool asimd_dotprod = false;
  bool i8mm = false;
  bool fp16 = false;
  bool sve = false;
};

// The instruction-set level a kernel is compiled for, from the least to the most preferred. A
// level's kernels use its own instructions only: CPUs with AVX-512 VNNI need not have AVX-VNNI
// (Ice Lake, Zen 4), and the common CPUs with AVX-VNNI have no AVX-512 (Alder Lake and later
// client cores; Zen 5 has both).
enum class CpuIsa {
  kScalar,   // portable C++
  kAvx2,     // AVX2 + FMA + F16C
  kAvxVnni,  // AVX2 + FMA + F16C + AVX-VNNI (vpdpbusd on 256-bit vectors)
  kAvx512,   // AVX-512 F/BW/VL/DQ + VNNI
  // aarch64 levels (never supported on x86, as the x86 ones are never supported on aarch64).
  kNeon,     // ASIMD (every aarch64 core): decode of the 4-8 bit types, the rest portable
  kNeonDot,  // ASIMD + dot product (sdot: Armv8.2 and later, Apple M1, Graviton 2 and later)
};

// Features of this CPU as CPUID and the OS (XGETBV) report them on x86, the kernel's HWCAP bits
// on aarch64 Linux; detected once.
const CpuFeatures& cpu_features();

// The detection itself, one file per platform (cpu_features_x86.cpp, cpu_features_aarch64.cpp,
// cpu_features_other.cpp); exactly one of them is compiled in.
CpuFeatures detect_cpu_features();

bool isa_supported(CpuIsa isa);
CpuIsa best_supported_isa();

// The level the kernels use: the best supported one, lowered by the environment variable
// GHOSTLINE_CPU=scalar|avx2|avxvnni|avx512|neon|neondot (read once). Asking for more than the CPU
// has, or for an unknown name, throws std::runtime_error naming what the CPU supports.
CpuIsa active_isa();

// What active_isa() makes of a GHOSTLINE_CPU value (null or empty: no override).
CpuIsa resolve_isa_override(const char* value);

std::string_view isa_name(CpuIsa isa);
std::optional<CpuIsa> parse_isa(std::string_view name);

// One line such as "avx2 fma f16c avx512f ... (amx present, unused)" for logs and model-info.
std::string describe_cpu_features();

}  // namespace ghostline::engine::cpu
