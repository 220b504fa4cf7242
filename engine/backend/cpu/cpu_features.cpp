#include "engine/backend/cpu/cpu_features.h"

#include <cstdint>
#include <cstdlib>
#include <stdexcept>

namespace ghostline::engine::cpu {

CpuIsa resolve_isa_override(const char* env) {
  if (env == nullptr || *env == '\0') return best_supported_isa();
  const auto wanted = parse_isa(env);
  if (!wanted)
    throw std::runtime_error(std::string("GHOSTLINE_CPU=") + env +
                             " is not one of scalar, avx2, avxvnni, avx512, neon, neondot");
  if (!isa_supported(*wanted))
    throw std::runtime_error(std::string("GHOSTLINE_CPU=") + env +
                             " asks for instructions this CPU lacks; it supports up to " +
                             std::string(isa_name(best_supported_isa())) + " (" +
                             describe_cpu_features() + ")");
  return *wanted;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect_cpu_features();
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
    case CpuIsa::kNeon:
      return GHOSTLINE_NEON_KERNELS && f.asimd;
    case CpuIsa::kNeonDot:
      return GHOSTLINE_NEON_KERNELS && f.asimd && f.asimd_dotprod;
  }
  return false;
}

CpuIsa best_supported_isa() {
  if (isa_supported(CpuIsa::kNeonDot)) return CpuIsa::kNeonDot;
  if (isa_supported(CpuIsa::kNeon)) return CpuIsa::kNeon;
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
    case CpuIsa::kNeon:
      return "neon";
    case CpuIsa::kNeonDot:
      return "neondot";
  }
  return "?";
}

std::optional<CpuIsa> parse_isa(std::string_view name) {
  if (name == "scalar") return CpuIsa::kScalar;
  if (name == "avx2") return CpuIsa::kAvx2;
  if (name == "avxvnni") return CpuIsa::kAvxVnni;
  if (name == "avx512") return CpuIsa::kAvx512;
  if (name == "neon") return CpuIsa::kNeon;
  if (name == "neondot") return CpuIsa::kNeonDot;
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
  add(f.asimd, "asimd");
  add(f.asimd_dotprod, "asimddp");
  add(f.i8mm, "i8mm");
  add(f.fp16, "fp16");
  add(f.sve, "sve");
  if (s.empty()) s = "no SIMD extensions used by Ghostline";
  return s;
}

}  // namespace ghostline::engine::cpu
