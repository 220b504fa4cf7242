#include "engine/backend/cpu/cpu_features.h"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define GHOSTLINE_X86 1
#endif

namespace ghostline::engine::cpu {
namespace {

#ifdef GHOSTLINE_X86
uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#ifdef GHOSTLINE_X86
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool avx = c & (1u << 28);
  const bool fma = c & (1u << 12);
  const bool f16c = c & (1u << 29);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;              // SSE and AVX state
  const bool os_zmm = os_ymm && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;      // XTILECFG, XTILEDATA
  if (!os_ymm) return f;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = b & (1u << 5);
  f.fma = fma;
  f.f16c = f16c;
  if (os_zmm) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512vnni = c & (1u << 11);
  }
  f.amx_bf16 = os_amx && (d & (1u << 22));
  f.amx_tile = os_amx && (d & (1u << 24));
  f.amx_int8 = os_amx && (d & (1u << 25));
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  f.avx_vnni = a1 & (1u << 4);
  f.avx512bf16 = os_zmm && (a1 & (1u << 5));
#endif
  return f;
}

}  // namespace

CpuIsa resolve_isa_override(const char* env) {
  if (env == nullptr || *env == '\0') return best_supported_isa();
  const auto wanted = parse_isa(env);
  if (!wanted)
    throw std::runtime_error(std::string("GHOSTLINE_CPU=") + env +
                             " is not one of scalar, avx2, avxvnni, avx512");
  if (!isa_supported(*wanted))
    throw std::runtime_error(std::string("GHOSTLINE_CPU=") + env +
                             " asks for instructions this CPU lacks; it supports up to " +
                             std::string(isa_name(best_supported_isa())) + " (" +
                             describe_cpu_features() + ")");
  return *wanted;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool isa_supported(CpuIsa isa) {
  const auto& f = cpu_features();
  switch (isa) {
    case CpuIsa::kScalar:
      return true;
    case CpuIsa::kAvx2:
      return f.avx2 && f.fma && f.f16c;
    case CpuIsa::kAvxVnni:
      return f.avx2 && f.fma && f.f16c && f.avx_vnni;
    case CpuIsa::kAvx512:
      return f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq &&
             f.avx512vnni;
  }
  return false;
}

CpuIsa best_supported_isa() {
  if (isa_supported(CpuIsa::kAvx512)) return CpuIsa::kAvx512;
  if (isa_supported(CpuIsa::kAvxVnni)) return CpuIsa::kAvxVnni;
  if (isa_supported(CpuIsa::kAvx2)) return CpuIsa::kAvx2;
  return CpuIsa::kScalar;
}

CpuIsa active_isa() {
  static const CpuIsa isa = resolve_isa_override(std::getenv("GHOSTLINE_CPU"));
  return isa;
}

std::string_view isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return "scalar";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvxVnni:
      return "avxvnni";
    case CpuIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

std::optional<CpuIsa> parse_isa(std::string_view name) {
  if (name == "scalar") return CpuIsa::kScalar;
  if (name == "avx2") return CpuIsa::kAvx2;
  if (name == "avxvnni") return CpuIsa::kAvxVnni;
  if (name == "avx512") return CpuIsa::kAvx512;
  return std::nullopt;
}

std::string describe_cpu_features() {
  const auto& f = cpu_features();
  std::string s;
  auto add = [&s](bool present, const char* name) {
    if (!present) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512dq, "avx512dq");
  add(f.avx512vnni, "avx512vnni");
  add(f.avx512bf16, "avx512bf16");
  add(f.avx_vnni, "avx-vnni");
  if (f.amx_tile || f.amx_int8 || f.amx_bf16) add(true, "(amx present, unused)");
  if (s.empty()) s = "no SIMD extensions used by Ghostline";
  return s;
}

}  // namespace ghostline::engine::cpu
