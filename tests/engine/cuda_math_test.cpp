// The element math of the CUDA kernels (engine/backend/cuda/cuda_math.h), run on the CPU: each
// function against the quant code or the reference backend's formula, so the kernels' math is
// checked on machines without a GPU.
#include "engine/backend/cuda/cuda_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/gguf/quant.h"
#include "engine/sampling/sampler.h"

namespace ghostline::engine {
namespace {

namespace m = cuda_math;

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

TEST(CudaMathTest, HalfToFloatMatchesTheQuantCodeOnEveryValue) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h)
    ASSERT_EQ(bits(m::half_to_float(uint16_t(h))), bits(gguf::fp16_to_fp32(uint16_t(h)))) << h;
}

TEST(CudaMathTest, FloatToHalfRoundsAsTheQuantCode) {
  std::mt19937 rng(7);
  std::vector<float> values = {0.0f,     -0.0f,   1.0f,     65504.0f, 65520.0f,  1e-8f, 5.96e-8f,
                               2.98e-8f, 6.1e-5f, -3.3e-6f, INFINITY, -INFINITY, 1e10f};
  std::uniform_real_distribution<float> exponent(-26, 17);
  for (int i = 0; i < 200000; ++i) {
    const float v =
        std::ldexp(std::uniform_real_distribution<float>(1, 2)(rng), int(exponent(rng)));
    values.push_back(i % 2 ? v : -v);
  }
  for (uint32_t h = 0; h < 0x7C00; ++h) {  // every finite half and the midpoints around it
    const float f = gguf::fp16_to_fp32(uint16_t(h));
    values.push_back(f);
    values.push_back(std::nextafter(f, INFINITY));
    values.push_back((f + gguf::fp16_to_fp32(uint16_t(h + 1))) / 2);
  }
  for (float v : values) ASSERT_EQ(m::float_to_half(v), gguf::fp32_to_fp16(v)) << v;
  EXPECT_EQ(m::float_to_half(NAN) & 0x7C00, 0x7C00);
  EXPECT_NE(m::float_to_half(NAN) & 0x3FF, 0);
}

TEST(CudaMathTest, SaturatedHalvesHoldOutliersAtTheLargestFiniteValue) {
  for (float v : {65520.0f, 70000.0f, 1e6f, 1e30f, INFINITY}) {
    EXPECT_EQ(m::float_to_half_saturated(v), 0x7BFF) << v;  // 65504
    EXPECT_EQ(m::float_to_half_saturated(-v), 0xFBFF) << -v;
  }
  // within range (65519 rounds down to 65504): the rounding of float_to_half, bit for bit
  for (float v : {0.0f, -0.0f, 1.5f, -2.75e-6f, 3e-8f, 65504.0f, 65519.0f, -65519.0f, 1234.5f})
    EXPECT_EQ(m::float_to_half_saturated(v), m::float_to_half(v)) << v;
  const uint16_t nan = m::float_to_half_saturated(NAN);
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x3FF, 0);
}

// Random blocks of `type` with sane fp16 scales at the given offsets (random bytes elsewhere).
std::vector<uint8_t> random_row(GgmlType type, int n, std::initializer_list<int> scale_offsets,
                                std::mt19937& rng) {
  const auto& traits = ggml_type_traits(type);
  std::vector<uint8_t> row(ggml_row_bytes(type, n));
  for (uint8_t& b : row) b = uint8_t(rng());
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (size_t block = 0; block < row.size() / traits.block_bytes; ++block)
    for (int off : scale_offsets) {
      const uint16_t h = gguf::fp32_to_fp16(scale(rng));
      std::memcpy(&row[block * traits.block_bytes + size_t(off)], &h, 2);
    }
  return row;
}

struct DequantCase {
  GgmlType type;
  float (*element)(const uint8_t*, int);
  void (*chunk)(const uint8_t*, int, float*);
  std::initializer_list<int> scale_offsets;
};

// Every type the kernels read in place, by element (embedding rows, GEMM tiles) and by chunk of
// 32 values (the mat-vec kernel), against the quant code's dequantization of the same bytes.
TEST(CudaMathTest, DequantizedElementsAndChunksMatchTheQuantCode) {
  const DequantCase cases[] = {
      {GgmlType::Q8_0, m::dequant_q8_0, m::chunk_q8_0, {0}},
      {GgmlType::Q4_0, m::dequant_q4_0, m::chunk_q4_0, {0}},
      {GgmlType::Q4_1, m::dequant_q4_1, m::chunk_q4_1, {0, 2}},
      {GgmlType::Q5_0, m::dequant_q5_0, m::chunk_q5_0, {0}},
      {GgmlType::Q5_1, m::dequant_q5_1, m::chunk_q5_1, {0, 2}},
      {GgmlType::IQ4_NL, m::dequant_iq4_nl, m::chunk_iq4_nl, {0}},
      {GgmlType::IQ4_XS, m::dequant_iq4_xs, m::chunk_iq4_xs, {0}},
      {GgmlType::Q4_K, m::dequant_q4_k, m::chunk_q4_k, {0, 2}},
      {GgmlType::Q5_K, m::dequant_q5_k, m::chunk_q5_k, {0, 2}},
      {GgmlType::Q6_K, m::dequant_q6_k, m::chunk_q6_k, {208}},
      {GgmlType::F16, m::dequant_f16, m::chunk_f16, {}},
      {GgmlType::BF16, m::dequant_bf16, m::chunk_bf16, {}},
  };
  std::mt19937 rng(3);
  const int n = 1024;
  for (const DequantCase& c : cases) {
    auto row = random_row(c.type, n, c.scale_offsets, rng);
    if (c.type == GgmlType::F16 || c.type == GgmlType::BF16)  // finite values only
      for (int i = 0; i < n; ++i) row[size_t(2 * i + 1)] &= 0x3F;
    std::vector<float> expected(n);
    gguf::dequantize_row(c.type, reinterpret_cast<const std::byte*>(row.data()), expected.data(),
                         n);
    for (int e = 0; e < n; ++e)
      ASSERT_FLOAT_EQ(c.element(row.data(), e), expected[size_t(e)])
          << ggml_type_name(c.type) << " element " << e;
    for (int chunk = 0; chunk < n / m::kChunk; ++chunk) {
      float w[m::kChunk];
      c.chunk(row.data(), chunk, w);
      for (int i = 0; i < m::kChunk; ++i)
        ASSERT_FLOAT_EQ(w[i], expected[size_t(m::kChunk * chunk + i)])
            << ggml_type_name(c.type) << " chunk " << chunk << " value " << i;
    }
  }
  std::vector<float> f32(64);
  for (float& v : f32) v = std::uniform_real_distribution<float>(-3, 3)(rng);
  for (int e = 0; e < 64; ++e)
    EXPECT_EQ(m::dequant_f32(reinterpret_cast<const uint8_t*>(f32.data()), e), f32[size_t(e)]);
  float w[m::kChunk];
  m::chunk_f32(reinterpret_cast<const uint8_t*>(f32.data()), 1, w);
  for (int i = 0; i < m::kChunk; ++i) EXPECT_EQ(w[i], f32[size_t(m::kChunk + i)]);
}

struct Int8Case {
  GgmlType type;
  m::WeightPart (*part)(const uint8_t*, int, int);
  std::initializer_list<int> scale_offsets;
};

// The int8 mat-vec kernel's arithmetic: activations quantized as the CPU backend quantizes them
// (bit for bit), then a row's dot product as the sum of its chunks' four parts, against the
// double-precision product of the dequantized weights with the dequantized activations.
TEST(CudaMathTest, Int8PartsSumToTheProductWithTheCpusQuantizedActivations) {
  const Int8Case cases[] = {
      {GgmlType::Q8_0, m::q8_weights_q8_0, {0}},     {GgmlType::Q4_0, m::q8_weights_q4_0, {0}},
      {GgmlType::Q4_1, m::q8_weights_q4_1, {0, 2}},  {GgmlType::Q5_0, m::q8_weights_q5_0, {0}},
      {GgmlType::Q5_1, m::q8_weights_q5_1, {0, 2}},  {GgmlType::IQ4_NL, m::q8_weights_iq4_nl, {0}},
      {GgmlType::IQ4_XS, m::q8_weights_iq4_xs, {0}}, {GgmlType::Q4_K, m::q8_weights_q4_k, {0, 2}},
      {GgmlType::Q5_K, m::q8_weights_q5_k, {0, 2}},  {GgmlType::Q6_K, m::q8_weights_q6_k, {208}},
  };
  std::mt19937 rng(11);
  const int n = 1024;
  for (const Int8Case& c : cases) {
    SCOPED_TRACE(ggml_type_name(c.type));
    const int block = m::q8_activation_block(c.type);
    ASSERT_EQ(block, int8_activation_block(c.type));
    for (int trial = 0; trial < 4; ++trial) {
      const auto row = random_row(c.type, n, c.scale_offsets, rng);
      std::vector<float> x(n);
      const float spread = trial == 3 ? 100.0f : 1.0f;
      for (float& v : x) v = std::uniform_real_distribution<float>(-spread, spread)(rng);
      if (trial == 1) std::fill(x.begin(), x.begin() + block, 0.0f);  // a block of zeros
      // The CPU's quantization, and the kernel's from the same functions it calls.
      std::vector<int8_t> q(n), ours(n);
      std::vector<float> d(size_t(n / block));
      std::vector<int32_t> sum16(size_t(n / 16));
      cpu::kernels::quantize_activations_portable(x.data(), n, block, q.data(), d.data(),
                                                  sum16.data());
      for (int b = 0; b < n / block; ++b) {
        float amax = 0.0f;
        for (int j = 0; j < block; ++j) amax = std::fmax(amax, std::fabs(x[size_t(b * block + j)]));
        const float scale = m::q8_scale(amax);
        ASSERT_EQ(bits(scale), bits(d[size_t(b)])) << "block " << b;
        const float inverse = m::q8_inverse(scale);
        for (int j = 0; j < block; ++j)
          ours[size_t(b * block + j)] = m::q8_value(x[size_t(b * block + j)], inverse);
      }
      ASSERT_EQ(ours, q);
      std::vector<float> w(n);
      gguf::dequantize_row(c.type, reinterpret_cast<const std::byte*>(row.data()), w.data(), n);
      double want = 0, magnitude = 0;
      for (int v = 0; v < n; ++v) {
        const double term = double(w[size_t(v)]) * q[size_t(v)] * d[size_t(v / block)];
        want += term;
        magnitude += std::abs(term);
      }
      double got = 0;
      for (int chunk = 0; chunk < n / m::kChunk; ++chunk)
        for (int p = 0; p < 4; ++p) {
          const auto* qc = reinterpret_cast<const uint8_t*>(q.data()) + m::kChunk * chunk;
          const m::Q8Part part{m::load_word(qc + 4 * p), m::load_word(qc + 16 + 4 * p),
                               d[size_t(m::kChunk * chunk / block)]};
          const m::WeightPart wp = c.part(row.data(), chunk, p);
          got += m::q8_has_min(c.type) ? m::q8_part_dot<true>(wp, part)
                                       : m::q8_part_dot<false>(wp, part);
        }
      EXPECT_NEAR(got, want, 1e-5 * magnitude + 1e-6) << "trial " << trial;
    }
  }
  EXPECT_EQ(m::q8_activation_block(GgmlType::F16), 0);
  EXPECT_EQ(m::dp4a(int(0x80FF7F01u), int(0x7F80FF02u), 5), 5 + 2 - 127 + 128 - 128 * 127);
}

// The int8 kernel's folded RMSNorm sums squares in a warp's order; the host repeats that order
// to check the kernel bit for bit, and it is the sum of squares.
TEST(CudaMathTest, WarpOrderSumOfSquaresIsTheSumOfSquares) {
  std::mt19937 rng(5);
  for (const int n : {4, 32, 132, 896, 1536, 4864}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = std::uniform_real_distribution<float>(-3, 3)(rng);
    double want = 0;
    for (float v : x) want += double(v) * v;
    const float got = m::warp_order_sum_squares(x.data(), n);
    EXPECT_NEAR(got, want, 1e-6 * want) << n;
    float lanes = 0;  // lane 0's share alone: values 0..3, 128..131, ...
    for (int i = 0; i < n; i += 128)
      for (int e = 0; e < 4; ++e) lanes = std::fma(x[size_t(i + e)], x[size_t(i + e)], lanes);
    EXPECT_EQ(bits(m::warp_order_lane_squares(x.data(), n, 0)), bits(lanes)) << n;
  }
}

TEST(CudaMathTest, Iq4GridIsTheFormatsTable) {
  for (int q = 0; q < 16; ++q) EXPECT_EQ(m::iq4_grid(q), gguf::kIq4nlValues[q]) << q;
}

TEST(CudaMathTest, RmsNormMatchesTheReferenceFormula) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 2);
  for (int n : {1, 7, 64, 896}) {
    std::vector<float> x(n), w(n), out(n);
    for (int i = 0; i < n; ++i) x[size_t(i)] = normal(rng), w[size_t(i)] = normal(rng);
    const float eps = 1e-6f;
    m::rmsnorm_row(out.data(), x.data(), w.data(), n, eps);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double scale = 1.0 / std::sqrt(ss / n + eps);
    for (int i = 0; i < n; ++i)
      EXPECT_NEAR(out[size_t(i)], x[size_t(i)] * scale * w[size_t(i)],
                  1e-5 * std::abs(x[size_t(i)] * scale * w[size_t(i)]) + 1e-6)
          << "n " << n << " i " << i;
  }
}

// The reference backend's RoPE of one head (engine/backend/reference/reference_backend.cpp).
void reference_rope(float* head, int pos, int d, float base, float freq_scale, bool neox) {
  for (int i = 0; i < d / 2; ++i) {
    const double theta = pos * double(freq_scale) * std::pow(double(base), -2.0 * i / d);
    const double cs = std::cos(theta), sn = std::sin(theta);
    const int a = neox ? i : 2 * i;
    const int b = neox ? i + d / 2 : 2 * i + 1;
    const double x0 = head[a], x1 = head[b];
    head[a] = static_cast<float>(x0 * cs - x1 * sn);
    head[b] = static_cast<float>(x0 * sn + x1 * cs);
  }
}

TEST(CudaMathTest, RopeMatchesTheReferenceInBothLayouts) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0, 1);
  for (bool neox : {false, true})
    for (int pos : {0, 1, 17, 4095, 30000}) {
      const int d = 64;
      std::vector<float> head(d);
      for (float& v : head) v = normal(rng);
      std::vector<float> ours = head;
      reference_rope(head.data(), pos, d, 1e6f, 0.5f, neox);
      for (int i = 0; i < d / 2; ++i) {
        int a, b;
        m::rope_pair_index(i, d, neox, a, b);
        m::rope_rotate(ours[size_t(a)], ours[size_t(b)], m::rope_angle(pos, i, d, 1e6f, 0.5f));
      }
      for (int i = 0; i < d; ++i)
        EXPECT_EQ(ours[size_t(i)], head[size_t(i)]) << "neox " << neox << " pos " << pos;
    }
}

TEST(CudaMathTest, SwigluIsSiluOfGateTimesUp) {
  for (float g : {-20.0f, -1.5f, 0.0f, 0.3f, 4.0f, 30.0f})
    for (float u : {-2.0f, 0.5f, 3.0f}) {
      const double expected = g / (1.0 + std::exp(-double(g))) * u;
      EXPECT_NEAR(m::swiglu(g, u), expected, 1e-6 * std::abs(expected) + 1e-7) << g << " " << u;
    }
}

// Attention of one query as the kernel splits it: `warps` interleaved key ranges, each with a
// streaming softmax over F16 keys and values, merged at the end; against the reference's
// two-pass softmax in double.
// The mat-vec kernel's split of a row over warps: every segment of a row read by exactly one of
// its warps, the warps of a block all used, long rows spread as far as the block allows.
TEST(CudaMathTest, MatvecSplitReadsEverySegmentOnce) {
  for (const int warps : {1, 2, 4, 8}) {
    for (int segments = 0; segments <= 40; ++segments) {
      const m::MatvecSplit sp = m::matvec_split(segments, warps);
      ASSERT_GE(sp.warps_per_row, 1);
      ASSERT_EQ(sp.warps_per_row * sp.rows_per_block, warps);
      ASSERT_LE(sp.warps_per_row, std::max(1, segments));
      if (segments >= warps) {
        EXPECT_EQ(sp.warps_per_row, warps);
      }
      std::vector<int> reads(static_cast<size_t>(segments), 0);
      for (int part = 0; part < sp.warps_per_row; ++part)
        for (int s = part; s < segments; s += sp.warps_per_row) ++reads[size_t(s)];
      for (int r : reads) EXPECT_EQ(r, 1);
    }
  }
  // The 0.5B shape at Q8_0: 896 columns are one segment (one warp a row), 4,864 are five
  // (four warps a row); a float row that is not a multiple of 4 is read value by value.
  EXPECT_EQ(m::matvec_segments(896), 1);
  EXPECT_EQ(m::matvec_split(m::matvec_segments(896), 4).warps_per_row, 1);
  EXPECT_EQ(m::matvec_segments(4864), 5);
  EXPECT_EQ(m::matvec_split(m::matvec_segments(4864), 4).warps_per_row, 4);
  EXPECT_EQ(m::matvec_segments(1022), 0);
}

// A launch's blocks and warps against its parts' rows: every row of every part read by exactly
// its warps_per_row warps, one of each part index, and no warp given a row of another part.
TEST(CudaMathTest, MatvecLaunchCoversEveryRowOfEveryPartOnce) {
  constexpr int kWarps = 4;
  const std::vector<std::vector<int>> launches = {{37, 16, 16}, {1}, {133, 9}, {896, 128, 128}};
  for (const auto& rows : launches) {
    for (int segments = 1; segments <= 6; ++segments) {
      const m::MatvecSplit sp = m::matvec_split(segments, kWarps);
      std::vector<int> first(3, 0);
      int blocks = 0;
      for (size_t p = 0; p < rows.size(); ++p) {
        first[p] = blocks;
        blocks += m::matvec_blocks(rows[p], sp.rows_per_block);
      }
      std::vector<std::vector<int>> seen(rows.size());  // per row: a bit per part index
      for (size_t p = 0; p < rows.size(); ++p) seen[p].assign(size_t(rows[p]), 0);
      for (int b = 0; b < blocks; ++b) {
        const int p = m::matvec_part(b, int(rows.size()), first[1], first[2]);
        ASSERT_LT(size_t(p), rows.size());
        for (int warp = 0; warp < kWarps; ++warp) {
          const int r = m::matvec_row(b, first[size_t(p)], warp, sp);
          ASSERT_GE(r, 0);
          if (r >= rows[size_t(p)]) continue;  // past the part's last row: idle
          const int bit = 1 << m::matvec_row_part(warp, sp);
          EXPECT_FALSE(seen[size_t(p)][size_t(r)] & bit) << "part " << p << " row " << r;
          seen[size_t(p)][size_t(r)] |= bit;
        }
      }
      for (size_t p = 0; p < rows.size(); ++p)
        for (int r = 0; r < rows[p]; ++r)
          EXPECT_EQ(seen[p][size_t(r)], (1 << sp.warps_per_row) - 1)
              << "part " << p << " row " << r << ", " << segments << " segments";
    }
  }
}

// The greedy-token kernel's rule: threads scan strides, their winners merge in any order; the
// result is the host sampler's argmax, ties included (few distinct values, many ties).
TEST(CudaMathTest, ArgmaxStatesMergeInAnyOrderToTheSamplersArgmax) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + int(rng() % 3000);
    std::vector<float> logits(static_cast<size_t>(n));
    const int distinct = 1 + int(rng() % 8);
    for (float& v : logits) v = float(int(rng() % uint32_t(distinct))) - 4.0f;
    const int threads = 1 + int(rng() % 64);
    std::vector<m::ArgmaxState> per_thread(static_cast<size_t>(threads), m::argmax_start());
    for (int i = 0; i < n; ++i)
      m::argmax_push(per_thread[size_t(i % threads)], logits[size_t(i)], i);
    std::vector<int> order(static_cast<size_t>(threads));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    m::ArgmaxState total = m::argmax_start();
    for (int t : order)
      m::argmax_push(total, per_thread[size_t(t)].value, per_thread[size_t(t)].index);
    ASSERT_EQ(m::argmax_index(total), argmax(logits)) << "trial " << trial;
  }
  // A row that nothing beats (all -inf) gives index 0, as the host does.
  std::vector<float> none(5, -INFINITY);
  m::ArgmaxState s = m::argmax_start();
  for (int i = 0; i < 5; ++i) m::argmax_push(s, none[size_t(i)], i);
  EXPECT_EQ(m::argmax_index(s), argmax(none));
}

TEST(CudaMathTest, StreamingSoftmaxAttentionMatchesTheTwoPassReference) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0, 1);
  const int d = 16, warps = 4;
  for (int n_keys : {1, 2, 3, 5, 9, 40}) {
    std::vector<float> q(d);
    std::vector<uint16_t> keys(size_t(n_keys) * d), values(size_t(n_keys) * d);
    for (float& v : q) v = normal(rng) * 2;
    for (uint16_t& k : keys) k = gguf::fp32_to_fp16(normal(rng));
    for (uint16_t& v : values) v = gguf::fp32_to_fp16(normal(rng));

    // Reference backend: scores in double, max-subtracted exp, weighted sum of values.
    std::vector<double> score(static_cast<size_t>(n_keys));
    double max_score = -INFINITY;
    for (int p = 0; p < n_keys; ++p) {
      double s = 0;
      for (int i = 0; i < d; ++i)
        s += double(q[size_t(i)]) * gguf::fp16_to_fp32(keys[size_t(p * d + i)]);
      score[size_t(p)] = s / std::sqrt(double(d));
      max_score = std::max(max_score, score[size_t(p)]);
    }
    double sum = 0;
    for (double& s : score) sum += (s = std::exp(s - max_score));
    std::vector<double> expected(d, 0.0);
    for (int i = 0; i < d; ++i)
      for (int p = 0; p < n_keys; ++p)
        expected[size_t(i)] +=
            score[size_t(p)] / sum * gguf::fp16_to_fp32(values[size_t(p * d + i)]);

    // The kernel's decomposition.
    std::vector<m::SoftmaxState> state(warps);
    std::vector<std::vector<float>> acc(warps, std::vector<float>(d, 0.0f));
    for (int w = 0; w < warps; ++w)
      for (int p = w; p < n_keys; p += warps) {
        float dot = 0;
        for (int i = 0; i < d; ++i) dot += q[size_t(i)] * m::half_to_float(keys[size_t(p * d + i)]);
        float rescale, weight;
        m::softmax_push(state[size_t(w)], dot / std::sqrt(float(d)), rescale, weight);
        for (int i = 0; i < d; ++i)
          acc[size_t(w)][size_t(i)] = acc[size_t(w)][size_t(i)] * rescale +
                                      weight * m::half_to_float(values[size_t(p * d + i)]);
      }
    m::SoftmaxState total = state[0];
    std::vector<float> out = acc[0];
    for (int w = 1; w < warps; ++w) {
      float scale_a, scale_b;
      m::softmax_merge(total, state[size_t(w)], scale_a, scale_b);
      for (int i = 0; i < d; ++i)
        out[size_t(i)] = out[size_t(i)] * scale_a + acc[size_t(w)][size_t(i)] * scale_b;
    }
    for (int i = 0; i < d; ++i)
      EXPECT_NEAR(out[size_t(i)] / total.sum, expected[size_t(i)], 1e-5)
          << n_keys << " keys, dim " << i;
  }
}

}  // namespace
}  // namespace ghostline::engine
