#include "engine/sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace ghostline::engine {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 0.5f};

TEST(Sampler, GreedyTakesTheLowestIdOfTheMaximum) {
  Sampler s;
  EXPECT_TRUE(s.greedy());
  EXPECT_EQ(s.sample(kLogits), 1);
  std::vector<float> p;
  s.distribution(kLogits, p);
  EXPECT_EQ(p, (std::vector<float>{0, 1, 0, 0, 0, 0}));
}

TEST(Sampler, TemperatureDistributionIsSoftmax) {
  Sampler s({.temperature = 2.0f});
  std::vector<float> p;
  s.distribution(kLogits, p);
  double z = 0;
  for (float l : kLogits) z += std::exp(l / 2.0);
  for (size_t i = 0; i < kLogits.size(); ++i)
    EXPECT_NEAR(p[i], std::exp(kLogits[i] / 2.0) / z, 1e-6);
}

TEST(Sampler, TopKKeepsTheKBest) {
  Sampler s({.temperature = 1.0f, .top_k = 3});
  std::vector<float> p;
  s.distribution(kLogits, p);
  EXPECT_GT(p[1], 0);
  EXPECT_GT(p[3], 0);
  EXPECT_GT(p[2], 0);
  EXPECT_EQ(p[0] + p[4] + p[5], 0);
  EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-6);
}

TEST(Sampler, TopPKeepsTheSmallestNucleus) {
  // Probabilities about 0.42, 0.42, 0.16 (after sorting): top_p 0.8 keeps the first two.
  Sampler s({.temperature = 1.0f, .top_p = 0.8f});
  const std::vector<float> logits = {2.0f, 2.0f, 1.0f, -10.0f};
  std::vector<float> p;
  s.distribution(logits, p);
  EXPECT_NEAR(p[0], 0.5, 1e-6);
  EXPECT_NEAR(p[1], 0.5, 1e-6);
  EXPECT_EQ(p[2], 0);
  EXPECT_EQ(p[3], 0);
}

TEST(Sampler, SeededSamplingIsReproducibleAndFollowsTheDistribution) {
  const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(5.0f), -50.0f};
  Sampler a({.temperature = 1.0f, .seed = 42}), b({.temperature = 1.0f, .seed = 42});
  std::vector<int> counts(4, 0);
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    const int32_t t = a.sample(logits);
    ASSERT_EQ(t, b.sample(logits));
    ++counts[size_t(t)];
  }
  // Expected 1/8, 2/8, 5/8; the standard error at n = 40000 is below 0.0025.
  EXPECT_NEAR(counts[0] / double(n), 0.125, 0.01);
  EXPECT_NEAR(counts[1] / double(n), 0.25, 0.01);
  EXPECT_NEAR(counts[2] / double(n), 0.625, 0.01);
  EXPECT_EQ(counts[3], 0);
  Sampler c({.temperature = 1.0f, .seed = 43});
  int differ = 0;
  Sampler d({.temperature = 1.0f, .seed = 42});
  for (int i = 0; i < 100; ++i) differ += c.sample(logits) != d.sample(logits);
  EXPECT_GT(differ, 0);
}

TEST(Sampler, UniformIsInUnitInterval) {
  Sampler s({.seed = 1});
  for (int i = 0; i < 1000; ++i) {
    const double u = s.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace ghostline::engine
