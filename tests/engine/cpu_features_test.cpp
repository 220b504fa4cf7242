#include "engine/backend/cpu/cpu_features.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace ghostline::engine::cpu {
namespace {

TEST(CpuFeatures, LevelsAreConsistent) {
  EXPECT_TRUE(isa_supported(CpuIsa::kScalar));
  if (isa_supported(CpuIsa::kAvx512) || isa_supported(CpuIsa::kAvxVnni)) {
    EXPECT_TRUE(isa_supported(CpuIsa::kAvx2));
  }
  if (isa_supported(CpuIsa::kNeonDot)) {
    EXPECT_TRUE(isa_supported(CpuIsa::kNeon));
  }
  // One architecture's levels only.
  EXPECT_FALSE(isa_supported(CpuIsa::kAvx2) && isa_supported(CpuIsa::kNeon));
  // The best level is the most preferred one the CPU has.
  for (auto isa : {CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512, CpuIsa::kNeon,
                   CpuIsa::kNeonDot}) {
    if (isa_supported(isa)) {
      EXPECT_GE(static_cast<int>(best_supported_isa()), static_cast<int>(isa));
    }
  }
  EXPECT_TRUE(isa_supported(best_supported_isa()));
  EXPECT_TRUE(isa_supported(active_isa()));
  const auto& f = cpu_features();
  if (f.avx512f) {
    EXPECT_TRUE(f.avx2);
  }
#if defined(__aarch64__)
  EXPECT_TRUE(f.asimd);  // part of the aarch64 base architecture
  EXPECT_TRUE(isa_supported(CpuIsa::kNeon));
  EXPECT_EQ(isa_supported(CpuIsa::kNeonDot), f.asimd_dotprod);
#endif
  EXPECT_FALSE(describe_cpu_features().empty());
}

TEST(CpuFeatures, IsaNamesRoundTrip) {
  for (auto isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512,
                   CpuIsa::kNeon, CpuIsa::kNeonDot})
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  EXPECT_FALSE(parse_isa("sse9").has_value());
}

TEST(CpuFeatures, OverrideLowersTheLevelOrExplainsWhyNot) {
  EXPECT_EQ(resolve_isa_override(nullptr), best_supported_isa());
  EXPECT_EQ(resolve_isa_override(""), best_supported_isa());
  EXPECT_EQ(resolve_isa_override("scalar"), CpuIsa::kScalar);
  if (isa_supported(CpuIsa::kAvx2)) {
    EXPECT_EQ(resolve_isa_override("avx2"), CpuIsa::kAvx2);
  }
  if (isa_supported(CpuIsa::kAvxVnni)) {
    EXPECT_EQ(resolve_isa_override("avxvnni"), CpuIsa::kAvxVnni);
  } else {
    EXPECT_THROW(resolve_isa_override("avxvnni"), std::runtime_error);
  }
  EXPECT_THROW(resolve_isa_override("sse9"), std::runtime_error);
  if (!isa_supported(CpuIsa::kAvx512)) {
    EXPECT_THROW(resolve_isa_override("avx512"), std::runtime_error);
  }
  for (auto isa : {CpuIsa::kNeon, CpuIsa::kNeonDot}) {
    const std::string name(isa_name(isa));
    if (isa_supported(isa)) {
      EXPECT_EQ(resolve_isa_override(name.c_str()), isa);
    } else {
      EXPECT_THROW(resolve_isa_override(name.c_str()), std::runtime_error);
    }
  }
}

}  // namespace
}  // namespace ghostline::engine::cpu
