#include "engine/backend/cpu/cpu_features.h"

#include <gtest/gtest.h>

namespace ghostline::engine::cpu {
namespace {

TEST(CpuFeatures, LevelsAreConsistent) {
  EXPECT_TRUE(isa_supported(CpuIsa::kScalar));
  if (isa_supported(CpuIsa::kAvx512)) {
    EXPECT_TRUE(isa_supported(CpuIsa::kAvx2));
  }
  EXPECT_TRUE(isa_supported(best_supported_isa()));
  EXPECT_TRUE(isa_supported(active_isa()));
  const auto& f = cpu_features();
  if (f.avx512f) {
    EXPECT_TRUE(f.avx2);
  }
  EXPECT_FALSE(describe_cpu_features().empty());
}

TEST(CpuFeatures, IsaNamesRoundTrip) {
  for (auto isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512})
    EXPECT_EQ(parse_isa(isa_name(isa)), isa);
  EXPECT_FALSE(parse_isa("sse9").has_value());
}

}  // namespace
}  // namespace ghostline::engine::cpu
