#include "engine/backend/cpu/vec_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/quant.h"

namespace ghostline::engine::cpu {
namespace {

class VecOpsTest : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "this CPU lacks " << isa_name(GetParam());
  }
  const VecOps& ops() const { return vec_ops(GetParam()); }

  std::vector<float> random(int64_t n, float sigma = 1.0f) {
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> v(n);
    for (auto& x : v) x = normal(rng_);
    return v;
  }
  std::mt19937 rng_{17};
};

// Lengths with and without vector tails, up to the FFN width.
const int64_t kLengths[] = {1, 7, 16, 33, 896, 4867};

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rel,
                  double abs) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], abs + rel * std::fabs(want[i])) << "index " << i;
}

TEST_P(VecOpsTest, RmsNorm) {
  for (int64_t n : kLengths) {
    auto x = random(n, 3.0f), w = random(n);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
    std::vector<double> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = x[i] * inv * w[i];
    std::vector<float> out(n);
    ops().rmsnorm(x.data(), w.data(), n, 1e-6f, out.data());
    expect_close(out, want, 1e-5, 1e-6);
    ops().rmsnorm(x.data(), w.data(), n, 1e-6f, x.data());  // in place
    expect_close(x, want, 1e-5, 1e-6);
  }
}

TEST_P(VecOpsTest, SoftmaxSumsToOneAndMatchesExp) {
  for (int64_t n : kLengths) {
    auto x = random(n, 8.0f);
    if (n > 2) x[1] = -1e4f;  // far below the max: exp underflows to (almost) 0
    double max = x[0];
    for (float v : x) max = std::max(max, double(v));
    std::vector<double> want(n);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += want[i] = std::exp(x[i] - max);
    for (auto& v : want) v /= sum;
    ops().softmax(x.data(), n);
    expect_close(x, want, 2e-6, 1e-9);
  }
}

TEST_P(VecOpsTest, SiluMul) {
  for (int64_t n : kLengths) {
    auto g = random(n, 6.0f), u = random(n);
    if (n > 3) {
      g[2] = -120.0f;  // exp(-g) beyond the float range
      g[3] = 95.0f;
    }
    std::vector<double> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
    std::vector<float> out(n);
    ops().silu_mul(g.data(), u.data(), n, out.data());
    expect_close(out, want, 2e-6, 1e-30);
  }
}

TEST_P(VecOpsTest, LayerNormWithAndWithoutBias) {
  for (int64_t n : kLengths) {
    // An offset far from zero: the mean must be taken out before the variance is summed.
    auto x = random(n, 3.0f), w = random(n), b = random(n);
    for (float& v : x) v += 40.0f;
    double mean = 0;
    for (float v : x) mean += v;
    mean /= double(n);
    double var = 0;
    for (float v : x) var += (v - mean) * (v - mean);
    const double inv = 1.0 / std::sqrt(var / double(n) + 1e-5);
    std::vector<double> want(n), want_no_bias(n);
    for (int64_t i = 0; i < n; ++i) {
      want_no_bias[i] = (x[i] - mean) * inv * w[i];
      want[i] = want_no_bias[i] + b[i];
    }
    // Relative to the spread of the normalized values, which the offset does not change.
    std::vector<float> out(n);
    ops().layernorm(x.data(), w.data(), b.data(), n, 1e-5f, out.data());
    expect_close(out, want, 1e-5, 2e-5);
    ops().layernorm(x.data(), w.data(), nullptr, n, 1e-5f, out.data());
    expect_close(out, want_no_bias, 1e-5, 2e-5);
    ops().layernorm(x.data(), w.data(), b.data(), n, 1e-5f, x.data());  // in place
    expect_close(x, want, 1e-5, 2e-5);
  }
}

// GELU with the tanh approximation, in double, as the formula is written.
// GELU, tanh approximation, in double: 0.5 x (1 + tanh u) = x / (1 + e^(-2u)), u = sqrt(2/pi)
// (x + 0.044715 x^3). The second form keeps its precision where 1 + tanh u cancels (x < -4).
// For large negative x the result is about x e^(-2u) with 2u up to ~88: float rounding of u, a
// few ulp, becomes a relative error of up to 88 times that, hence 3e-5 below.
double gelu_reference(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * u));
}

TEST(GeluReference, IsTheTanhFormula) {
  for (double x = -4.0; x <= 4.0; x += 0.125)
    EXPECT_NEAR(gelu_reference(x),
                0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))),
                1e-14)
        << x;
}

TEST_P(VecOpsTest, GeluMatchesTheTanhFormula) {
  for (int64_t n : kLengths) {
    auto x = random(n, 4.0f);
    if (n > 3) {
      x[0] = -120.0f;  // the exp of the sigmoid form leaves the float range
      x[1] = 95.0f;
      x[2] = 0.0f;
    }
    std::vector<double> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = gelu_reference(x[i]);
    std::vector<float> out(n);
    ops().gelu(x.data(), n, out.data());
    expect_close(out, want, 3e-5, 1e-30);
    ops().gelu(x.data(), n, x.data());  // in place
    expect_close(x, want, 3e-5, 1e-30);
  }
}

TEST_P(VecOpsTest, GeluMulIsGeGlu) {
  for (int64_t n : kLengths) {
    auto g = random(n, 4.0f), u = random(n);
    if (n > 3) {
      g[0] = -120.0f;
      g[1] = 95.0f;
    }
    std::vector<double> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = gelu_reference(g[i]) * u[i];
    std::vector<float> out(n);
    ops().gelu_mul(g.data(), u.data(), n, out.data());
    expect_close(out, want, 3e-5, 1e-30);
    ops().gelu_mul(g.data(), u.data(), n, u.data());  // in place over up
    expect_close(u, want, 3e-5, 1e-30);
  }
}

TEST_P(VecOpsTest, AddScaleDotAxpy) {
  for (int64_t n : kLengths) {
    auto a = random(n), b = random(n);
    std::vector<float> out(n);
    ops().add(a.data(), b.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]);

    auto s = a;
    ops().scale(s.data(), n, 0.37f);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(s[i], a[i] * 0.37f);

    double want = 0, abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      want += double(a[i]) * b[i];
      abs_sum += std::fabs(double(a[i]) * b[i]);
    }
    EXPECT_NEAR(ops().dot(a.data(), b.data(), n), want, 1e-6 * abs_sum + 1e-7) << n;

    auto y = b;
    ops().axpy(-1.5f, a.data(), n, y.data());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(y[i], b[i] - 1.5 * a[i], 1e-6 * (1 + std::fabs(y[i])));
  }
}

TEST_P(VecOpsTest, Fp16RowsMatchTheScalarConversionsExactly) {
  for (int64_t n : kLengths) {
    auto x = random(n, 1000.0f);
    if (n > 4) {
      x[0] = 1e-7f;    // half subnormal
      x[1] = 70000.f;  // overflows to inf
      x[2] = -0.0f;
      x[3] = 1.0f + 0x1p-11f;  // a tie: to even
    }
    std::vector<uint16_t> h(n);
    ops().fp32_to_fp16(x.data(), n, h.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(h[i], gguf::fp32_to_fp16(x[i])) << "index " << i;
    std::vector<float> back(n);
    ops().fp16_to_fp32(h.data(), n, back.data());
    for (int64_t i = 0; i < n; ++i) {
      const float want = gguf::fp16_to_fp32(h[i]);
      ASSERT_EQ(std::memcmp(&back[i], &want, 4), 0) << "index " << i;
    }
  }
}

// Attention kAttnKeys keys at a time with a running softmax, the keys and values read as F16
// from panels scattered in memory, gives the softmax-weighted values over all keys; what lies
// past a call's keys (NaN here) is ignored; and each query row gets the same bits whichever rows
// are computed with it.
TEST_P(VecOpsTest, AttentionByBlocksIsSoftmaxAttentionAndEachRowStandsAlone) {
  constexpr uint16_t kNan = 0x7e00;
  for (int64_t d : {64, 40, 128})
    for (int64_t n_keys : {1, 16, 37, 64, 150})
      for (int64_t n_q : {1, 7, 9}) {
        const auto q = random(n_q * d);
        auto k = random(n_keys * d, 2.0f), v = random(n_keys * d);
        for (std::vector<float>* x : {&k, &v})  // the values the F16 panels hold
          for (float& e : *x) e = gguf::fp16_to_fp32(gguf::fp32_to_fp16(e));
        // Each panel of kAttnRows keys in a buffer of its own: keys transposed, then values.
        const int64_t n_panels = (n_keys + kAttnRows - 1) / kAttnRows;
        std::vector<std::vector<uint16_t>> panel(static_cast<size_t>(n_panels));
        for (int64_t b = 0; b < n_panels; ++b) {
          std::vector<uint16_t>& p = panel[size_t(b)];
          p.assign(size_t(2 * kAttnRows * d), kNan);
          for (int64_t r = b * kAttnRows; r < std::min(n_keys, (b + 1) * kAttnRows); ++r)
            for (int64_t i = 0; i < d; ++i) {
              p[size_t(i * kAttnRows + r % kAttnRows)] = gguf::fp32_to_fp16(k[r * d + i]);
              p[size_t((kAttnRows + r % kAttnRows) * d + i)] = gguf::fp32_to_fp16(v[r * d + i]);
            }
        }
        const float scale = 1.0f / std::sqrt(float(d));
        // Runs the blocks for rows [g0, g0 + rows) and normalizes.
        auto run = [&](int64_t g0, int64_t rows) {
          std::vector<float> m(rows, -INFINITY), l(rows, 0.0f), out(rows * d, 0.0f);
          for (int64_t b0 = 0; b0 < n_keys; b0 += kAttnKeys) {
            const int64_t keys = std::min(kAttnKeys, n_keys - b0);
            const uint16_t* kt[kAttnKeys / kAttnRows];
            const uint16_t* vr[kAttnKeys / kAttnRows];
            for (int64_t b = 0; b * kAttnRows < keys; ++b) {
              kt[b] = panel[size_t(b0 / kAttnRows + b)].data();
              vr[b] = kt[b] + kAttnRows * d;
            }
            // The next stretch's panels are asked for (a request changes no result).
            const uint16_t* ahead[kAttnKeys / kAttnRows];
            int64_t ahead_runs = 0;
            for (int64_t b = b0 / kAttnRows + kAttnKeys / kAttnRows;
                 b < n_panels && ahead_runs < kAttnKeys / kAttnRows; ++b)
              ahead[ahead_runs++] = panel[size_t(b)].data();
            ops().attn_block(kt, vr, keys, d, q.data() + g0 * d, rows, scale, m.data(), l.data(),
                             out.data(), ahead, ahead_runs);
          }
          for (int64_t g = 0; g < rows; ++g)
            for (int64_t i = 0; i < d; ++i) out[g * d + i] /= l[g];
          return out;
        };
        const auto all = run(0, n_q);
        std::vector<double> want(n_q * d, 0.0);
        for (int64_t g = 0; g < n_q; ++g) {
          std::vector<double> s(n_keys);
          double max = -INFINITY, sum = 0;
          for (int64_t r = 0; r < n_keys; ++r) {
            for (int64_t i = 0; i < d; ++i) s[r] += double(q[g * d + i]) * k[r * d + i];
            s[r] *= scale;
            max = std::max(max, s[r]);
          }
          for (double& x : s) sum += x = std::exp(x - max);
          for (int64_t r = 0; r < n_keys; ++r)
            for (int64_t i = 0; i < d; ++i) want[g * d + i] += s[r] / sum * v[r * d + i];
        }
        SCOPED_TRACE("d " + std::to_string(d) + " keys " + std::to_string(n_keys) + " queries " +
                     std::to_string(n_q));
        expect_close(all, want, 1e-5, 1e-5);
        for (int64_t g = 0; g < n_q; ++g) {
          const auto alone = run(g, 1);
          ASSERT_EQ(std::memcmp(alone.data(), &all[g * d], 4 * d), 0) << "row " << g;
        }
      }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, VecOpsTest,
                         ::testing::Values(CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512,
                                           CpuIsa::kNeon),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace ghostline::engine::cpu
