#include "engine/backend/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/gguf/quant.h"

namespace ghostline::engine::cpu {
namespace {

using gguf::BlockIq4Xs;
using gguf::BlockQ2_K;
using gguf::BlockQ3_K;
using gguf::BlockQ4_0;
using gguf::BlockQ4_K;
using gguf::BlockQ5_K;
using gguf::BlockQ6_K;
using gguf::BlockQ8_0;
using gguf::dequantize_row;
using gguf::fp32_to_bf16;
using gguf::fp32_to_fp16;
using gguf::kQK8_0;
using gguf::kQK_K;

// A random matrix with every bit pattern of the quant values and sane, finite scales; with
// `fill`, every byte of the quant values is that byte instead.
std::vector<std::byte> random_weights(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng,
                                      int fill = -1) {
  const size_t row_bytes = ggml_row_bytes(type, cols);
  std::vector<std::byte> data(row_bytes * rows);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : data) b = static_cast<std::byte>(fill >= 0 ? fill : byte(rng));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  auto put16 = [](std::byte* p, uint16_t v) { std::memcpy(p, &v, 2); };
  const int64_t n = rows * cols;
  switch (type) {
    case GgmlType::F32:
      for (int64_t i = 0; i < n; ++i) {
        const float v = normal(rng);
        std::memcpy(data.data() + 4 * i, &v, 4);
      }
      break;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) put16(data.data() + 2 * i, fp32_to_fp16(normal(rng)));
      break;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) put16(data.data() + 2 * i, fp32_to_bf16(normal(rng)));
      break;
    case GgmlType::Q8_0:
      for (size_t off = 0; off < data.size(); off += sizeof(BlockQ8_0))
        put16(data.data() + off, fp32_to_fp16(scale(rng)));
      break;
    case GgmlType::Q4_0:
      for (size_t off = 0; off < data.size(); off += sizeof(BlockQ4_0))
        put16(data.data() + off, fp32_to_fp16(scale(rng)));
      break;
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::IQ4_NL: {
      const size_t block = ggml_type_traits(type).block_bytes;
      const bool has_min = type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
      for (size_t off = 0; off < data.size(); off += block) {
        put16(data.data() + off,
              fp32_to_fp16(scale(rng) * (type == GgmlType::IQ4_NL ? 0.1f : 1.0f)));
        if (has_min) put16(data.data() + off + 2, fp32_to_fp16(-8.0f * scale(rng)));
      }
      break;
    }
    case GgmlType::IQ4_XS:
      for (size_t off = 0; off < data.size(); off += sizeof(BlockIq4Xs))
        put16(data.data() + off, fp32_to_fp16(scale(rng) * 0.01f));
      break;
    case GgmlType::Q2_K:
      for (size_t off = 0; off < data.size(); off += sizeof(BlockQ2_K)) {
        put16(data.data() + off + offsetof(BlockQ2_K, d), fp32_to_fp16(scale(rng) * 0.2f));
        put16(data.data() + off + offsetof(BlockQ2_K, dmin), fp32_to_fp16(scale(rng) * 0.1f));
      }
      break;
    case GgmlType::Q3_K:
      for (size_t off = 0; off < data.size(); off += sizeof(BlockQ3_K))
        put16(data.data() + off + offsetof(BlockQ3_K, d), fp32_to_fp16(scale(rng) * 0.05f));
      break;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K: {
      const size_t block = type == GgmlType::Q4_K ? sizeof(BlockQ4_K) : sizeof(BlockQ5_K);
      for (size_t off = 0; off < data.size(); off += block) {
        put16(data.data() + off, fp32_to_fp16(scale(rng) * 0.1f));      // d
        put16(data.data() + off + 2, fp32_to_fp16(scale(rng) * 0.2f));  // dmin
      }
      break;
    }
    case GgmlType::Q6_K:
      for (size_t off = 0; off < data.size(); off += sizeof(BlockQ6_K))
        put16(data.data() + off + offsetof(BlockQ6_K, d), fp32_to_fp16(scale(rng) * 0.05f));
      break;
    default:
      ADD_FAILURE() << "no generator for " << ggml_type_name(type);
  }
  return data;
}

// The layouts a test runs a matrix in: as the file has it and, where level `isa` reads packed
// weights of its type, packed as well (into `storage`).
std::vector<WeightMatrix> layouts(const WeightMatrix& w, CpuIsa isa, ThreadPool& pool,
                                  std::vector<std::byte>& storage) {
  std::vector<WeightMatrix> out{w};
  if (!matmul_packs(w, isa)) return out;
  storage.assign(matmul_packed_bytes(w) + 64, std::byte{0x5A});
  auto* p = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) &
                                         ~uintptr_t{63});
  matmul_pack(w, p, pool);
  out.push_back(w);
  out.back().packed = p;
  return out;
}

std::string layout_name(const WeightMatrix& w) {
  return w.packed ? "packed" : "as in the file";
}

// Every row of w dequantized, rows x cols floats.
std::vector<float> dequantized(const WeightMatrix& w) {
  std::vector<float> wf(w.rows * w.cols);
  for (int64_t r = 0; r < w.rows; ++r)
    dequantize_row(w.type, w.data + r * w.row_bytes, wf.data() + r * w.cols, w.cols);
  return wf;
}

// m (w in one of its layouts) times n tokens of x gives the reference up to float rounding:
// |error| ≤ 1e-5 · Σ|w·x| per output, wf being w dequantized.
void expect_reference_up_to_rounding(const WeightMatrix& m, const WeightMatrix& w,
                                     const std::vector<float>& wf, const std::vector<float>& x,
                                     int64_t n, ThreadPool& pool, CpuIsa isa, Tokens mode) {
  const int64_t rows = w.rows, cols = w.cols;
  std::vector<float> y(n * rows), expected(n * rows);
  matmul(m, x.data(), n, y.data(), pool, isa, mode);
  matmul_reference(w, x.data(), n, expected.data());
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double abs_sum = 0.0;
      for (int64_t k = 0; k < cols; ++k)
        abs_sum += std::fabs(double(wf[r * cols + k]) * x[t * cols + k]);
      ASSERT_NEAR(y[t * rows + r], expected[t * rows + r], 1e-5 * abs_sum + 1e-6)
          << "token " << t << " row " << r;
    }
}

using Param = std::tuple<GgmlType, CpuIsa>;

class MatmulTest : public ::testing::TestWithParam<Param> {};

// Every path against the double-accumulated reference. The bound is derived, not tuned:
// - float activations: float32 accumulation, |error| ≤ 1e-5 · Σ|w·x| for these lengths;
// - quantized activations (decode of quantized weights): each x_k moves by at most half a step
//   of its block, d_b / 2 = max|x in block| / 254, so |error| ≤ Σ_k |w_k| · d_b / 2 (plus the
//   float term). Relative to |y| that is about 1e-2, as the brief for the format expects.
TEST_P(MatmulTest, MatchesReferenceForEveryTokenCount) {
  const auto [type, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  const bool k_quant = ggml_type_traits(type).block_elems == kQK_K;
  const bool blocked = ggml_type_traits(type).block_elems == kQK8_0;
  // Column counts leave partial prefill chunks and partial vectors where the type allows.
  const int64_t cols = k_quant ? 768 : blocked ? 352 : 344;
  const int block = k_quant ? kQK_K : blocked ? kQK8_0 : 1;
  std::mt19937 rng(static_cast<unsigned>(type) * 31 + static_cast<unsigned>(isa));
  ThreadPool pool(3);

  for (int64_t rows : {37, 70}) {
    const auto data = random_weights(type, rows, cols, rng);
    const WeightMatrix w{type, rows, cols, data.data(), ggml_row_bytes(type, cols)};
    const std::vector<float> wf = dequantized(w);

    // Each token count, and again as a batch where that changes the path.
    std::vector<std::pair<int64_t, Tokens>> cases;
    for (int64_t n : {1, 2, 3, 5, 6, 8, 11, 16, 17, 64}) {
      cases.emplace_back(n, Tokens::kSteps);
      if (n >= kMatmulBatchMinTokens && n <= kMatmulDecodeMaxTokens)
        cases.emplace_back(n, Tokens::kBatch);
    }
    std::vector<std::byte> storage;
    for (const WeightMatrix& m : layouts(w, isa, pool, storage))
      for (const auto& [n, mode] : cases) {
        SCOPED_TRACE("rows " + std::to_string(rows) + " tokens " + std::to_string(n) +
                     (mode == Tokens::kBatch ? " as a batch" : "") + ", " + layout_name(m));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> x(n * cols);
        for (auto& v : x) v = normal(rng);
        x[3] = 40.0f;  // an outlier, as real activations have
        std::vector<float> y(n * rows, std::nanf("")), expected(n * rows);
        matmul(m, x.data(), n, y.data(), pool, isa, mode);
        matmul_reference(w, x.data(), n, expected.data());

        const bool quantized = matmul_quantizes_activations(type, n, isa, mode);
        int failures = 0;
        for (int64_t t = 0; t < n; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            double abs_sum = 0.0, quant_bound = 0.0;
            for (int64_t b = 0; b < cols / block; ++b) {
              double amax = 0.0;
              for (int j = 0; j < block; ++j)
                amax = std::max(amax, std::fabs(double(x[t * cols + b * block + j])));
              for (int j = 0; j < block; ++j) {
                const double wk = wf[r * cols + b * block + j];
                abs_sum += std::fabs(wk * x[t * cols + b * block + j]);
                quant_bound += std::fabs(wk) * amax / 254.0;
              }
            }
            const double bound = 1e-5 * abs_sum + (quantized ? 1.01 * quant_bound : 0.0) + 1e-6;
            const double err = std::fabs(double(y[t * rows + r]) - expected[t * rows + r]);
            if (!(err <= bound) && ++failures <= 5)
              ADD_FAILURE() << "token " << t << " row " << r << ": " << y[t * rows + r]
                            << " vs reference " << expected[t * rows + r] << " (bound " << bound
                            << ")";
          }
        }
        ASSERT_EQ(failures, 0);
      }
  }
}

// With activations that 8-bit quantization keeps exactly (integers up to 127 in magnitude, 127
// in every group of 16, so every block's scale is 1), every path must give the reference up to
// float rounding: an error in how a kernel unpacks weights (an offset off by one) is far below
// the quantization bound of MatchesReferenceForEveryTokenCount but not below this one.
TEST_P(MatmulTest, ExactOnActivationsThatQuantizeExactly) {
  const auto [type, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  const int64_t cols = ggml_type_traits(type).block_elems == kQK_K ? 512 : 352;
  const int64_t rows = 37;
  std::mt19937 rng(static_cast<unsigned>(type) * 13 + static_cast<unsigned>(isa));
  const auto data = random_weights(type, rows, cols, rng);
  const WeightMatrix w{type, rows, cols, data.data(), ggml_row_bytes(type, cols)};
  const std::vector<float> wf = dequantized(w);
  ThreadPool pool(2);
  std::uniform_int_distribution<int> value(-127, 127);
  std::vector<std::byte> storage;
  for (const WeightMatrix& m : layouts(w, isa, pool, storage))
    for (const auto& [n, mode] : std::vector<std::pair<int64_t, Tokens>>{
             {1, Tokens::kSteps}, {8, Tokens::kSteps}, {8, Tokens::kBatch}, {33, Tokens::kSteps}}) {
      SCOPED_TRACE("tokens " + std::to_string(n) + (mode == Tokens::kBatch ? " as a batch" : "") +
                   ", " + layout_name(m));
      std::vector<float> x(n * cols);
      for (int64_t k = 0; k < n * cols; ++k)
        x[k] = k % 16 == 0 ? 127.0f * (value(rng) < 0 ? -1.0f : 1.0f) : float(value(rng));
      ASSERT_NO_FATAL_FAILURE(expect_reference_up_to_rounding(m, w, wf, x, n, pool, isa, mode));
    }
}

// Integer kernels sum products of weight bytes and activation bytes in narrow lanes (AVX2's
// maddubs sums pairs in int16 with saturation, and a few words' sums add there before they
// widen): every quant byte at its largest or smallest pattern against activations at ±127 of the
// same sign must still give the reference.
TEST_P(MatmulTest, LargestValuesDoNotOverflowTheIntegerSums) {
  const auto [type, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  const int64_t cols = ggml_type_traits(type).block_elems == kQK_K ? 512 : 256;
  const int64_t rows = 19;
  ThreadPool pool(2);
  for (const int fill : {0xFF, 0x80, 0x7F, 0x00}) {
    std::mt19937 rng(static_cast<unsigned>(fill));
    const auto data = random_weights(type, rows, cols, rng, fill);
    const WeightMatrix w{type, rows, cols, data.data(), ggml_row_bytes(type, cols)};
    const std::vector<float> wf = dequantized(w);
    std::vector<std::byte> storage;
    for (const WeightMatrix& m : layouts(w, isa, pool, storage))
      for (const auto& [n, mode] :
           std::vector<std::pair<int64_t, Tokens>>{{2, Tokens::kSteps}, {8, Tokens::kBatch}}) {
        SCOPED_TRACE("fill " + std::to_string(fill) + ", tokens " + std::to_string(n) +
                     (mode == Tokens::kBatch ? " as a batch" : "") + ", " + layout_name(m));
        std::vector<float> x(n * cols);
        for (int64_t k = 0; k < n * cols; ++k) x[k] = (k / cols) % 2 == 0 ? 127.0f : -127.0f;
        ASSERT_NO_FATAL_FAILURE(expect_reference_up_to_rounding(m, w, wf, x, n, pool, isa, mode));
      }
  }
}

// A row's result must not depend on the rows computed beside it (decode kernels take rows in
// groups, and range boundaries move with the thread count): each row of a matrix, taken as a
// matrix of its own, gives bit for bit what the whole product gave it.
TEST_P(MatmulTest, EachRowGivesWhatItGivesAlone) {
  const auto [type, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  const int64_t cols = ggml_type_traits(type).block_elems == kQK_K ? 512 : 160;
  const int64_t rows = 23;
  std::mt19937 rng(static_cast<unsigned>(type) * 17 + static_cast<unsigned>(isa));
  const auto data = random_weights(type, rows, cols, rng);
  const WeightMatrix w{type, rows, cols, data.data(), ggml_row_bytes(type, cols)};
  ThreadPool pool(2);
  std::vector<std::byte> storage, one_storage;
  for (const WeightMatrix& m : layouts(w, isa, pool, storage))
    for (int64_t n : {1, 3}) {
      SCOPED_TRACE("tokens " + std::to_string(n) + ", " + layout_name(m));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> x(n * cols);
      for (auto& v : x) v = normal(rng);
      std::vector<float> y(n * rows);
      matmul(m, x.data(), n, y.data(), pool, isa);
      for (int64_t r = 0; r < rows; ++r) {
        const WeightMatrix one_row{type, 1, cols, data.data() + r * w.row_bytes, w.row_bytes};
        const WeightMatrix one =
            m.packed ? layouts(one_row, isa, pool, one_storage).back() : one_row;
        std::vector<float> alone(n);
        matmul(one, x.data(), n, alone.data(), pool, isa);
        for (int64_t t = 0; t < n; ++t)
          ASSERT_EQ(std::memcmp(&alone[t], &y[t * rows + r], sizeof(float)), 0)
              << "row " << r << " token " << t << ": " << alone[t] << " alone, " << y[t * rows + r]
              << " in the matrix";
      }
    }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(ggml_type_name(std::get<0>(info.param))) + "_" +
         std::string(isa_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesAllPaths, MatmulTest,
    ::testing::Combine(
        ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                          GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                          GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::Q2_K, GgmlType::Q3_K,
                          GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K),
        ::testing::Values(CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512,
                          CpuIsa::kNeon, CpuIsa::kNeonDot)),
    param_name);

class MatmulSharedInputTest : public ::testing::TestWithParam<CpuIsa> {};

// The joint product must give each matrix's outputs bit for bit as its own matmul (speculative
// verification relies on it): matrices of both activation block sizes (Q4_K and Q6_K: 256;
// Q5_0 and Q4_0 with quads, Q8_0 without: 32) and of float weights, row counts that leave
// partial groups of 16 rows, and pools whose ranges cross from one matrix into the next.
TEST_P(MatmulSharedInputTest, MatchesSeparateProductsBitForBit) {
  const CpuIsa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  const int64_t cols = 512;
  const std::pair<GgmlType, int64_t> shapes[] = {{GgmlType::Q4_K, 37}, {GgmlType::Q5_0, 21},
                                                 {GgmlType::Q8_0, 50}, {GgmlType::F32, 9},
                                                 {GgmlType::Q6_K, 16}, {GgmlType::Q4_0, 3}};
  std::mt19937 rng(77 + static_cast<unsigned>(isa));
  std::vector<std::vector<std::byte>> data;
  std::vector<WeightMatrix> matrices;
  for (const auto& [type, rows] : shapes) {
    data.push_back(random_weights(type, rows, cols, rng));
    matrices.push_back({type, rows, cols, data.back().data(), ggml_row_bytes(type, cols)});
  }
  // All of them, reordered, mixed triples and pairs as attention and feed-forward take (one
  // matrix twice), and one alone.
  const std::vector<std::vector<int>> sets = {
      {0, 1, 2, 3, 4, 5}, {5, 3, 2, 0, 4, 1}, {2, 1, 1}, {4, 0}, {3}};

  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (const auto& set : sets) {
      for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " tokens " + std::to_string(n) +
                     " matrices " + std::to_string(set.size()) + " first " +
                     std::string(ggml_type_name(matrices[size_t(set[0])].type)));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> x(n * cols);
        for (auto& v : x) v = normal(rng);
        x[5] = -30.0f;  // an outlier, as real activations have
        std::vector<const WeightMatrix*> ws;
        std::vector<std::vector<float>> expected, got;
        for (int m : set) {
          const WeightMatrix& w = matrices[size_t(m)];
          ws.push_back(&w);
          expected.emplace_back(n * w.rows);
          got.emplace_back(n * w.rows, std::nanf(""));
          matmul(w, x.data(), n, expected.back().data(), pool, isa);
        }
        std::vector<float*> ys;
        for (auto& y : got) ys.push_back(y.data());
        matmul_shared_input(ws, x.data(), n, ys, pool, isa);
        for (size_t i = 0; i < set.size(); ++i)
          ASSERT_EQ(std::memcmp(got[i].data(), expected[i].data(), got[i].size() * sizeof(float)),
                    0)
              << "matrix " << i << " (" << ggml_type_name(ws[i]->type) << ", " << ws[i]->rows
              << " rows)";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, MatmulSharedInputTest,
                         ::testing::Values(CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvxVnni,
                                           CpuIsa::kAvx512, CpuIsa::kNeon, CpuIsa::kNeonDot),
                         [](const ::testing::TestParamInfo<CpuIsa>& info) {
                           return std::string(isa_name(info.param));
                         });

TEST(Matmul, SharedInputRejectsMismatchedShapes) {
  ThreadPool pool(1);
  std::vector<std::byte> raw(4096);
  std::vector<float> x(64), y(8);
  const WeightMatrix a{GgmlType::F32, 2, 32, raw.data(), 128};
  const WeightMatrix b{GgmlType::F32, 2, 64, raw.data(), 256};
  const WeightMatrix* ws[] = {&a, &b};
  float* const ys[] = {y.data(), y.data() + 4};
  EXPECT_THROW(matmul_shared_input(ws, x.data(), 1, ys, pool), std::invalid_argument);
  EXPECT_THROW(matmul_shared_input(std::span(ws, 1), x.data(), 1, ys, pool), std::invalid_argument);
}

TEST(Matmul, DecodeOfQuantizedWeightsIsCloseInRelativeTerms) {
  // Rounding x to 8 bits per block of 256 normal values (max |x| about 3) errs by about
  // 3 / 127 / sqrt(12) = 0.007 of |x| per value, so about that (rms) of |y|: allow 2e-2.
  std::mt19937 rng(9);
  ThreadPool pool(2);
  const int64_t rows = 64, cols = 1024;
  const auto data = random_weights(GgmlType::Q4_K, rows, cols, rng);
  const WeightMatrix w{GgmlType::Q4_K, rows, cols, data.data(),
                       ggml_row_bytes(GgmlType::Q4_K, cols)};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(cols), y(rows), expected(rows);
  for (auto& v : x) v = normal(rng);
  matmul(w, x.data(), 1, y.data(), pool);
  matmul_reference(w, x.data(), 1, expected.data());
  double err = 0.0, norm = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    err += std::pow(y[r] - expected[r], 2);
    norm += std::pow(expected[r], 2);
  }
  EXPECT_LT(std::sqrt(err / norm), 2e-2);
}

TEST(Matmul, LevelQuantizersOfActivationsMatchThePortableOneBitForBit) {
  std::vector<const kernels::KernelSet*> sets;
#if GHOSTLINE_X86_KERNELS
  if (isa_supported(CpuIsa::kAvx2)) sets.push_back(&kernels::avx2_kernels());
  if (isa_supported(CpuIsa::kAvxVnni)) sets.push_back(&kernels::avxvnni_kernels());
  if (isa_supported(CpuIsa::kAvx512)) sets.push_back(&kernels::avx512_kernels());
#endif
#if GHOSTLINE_NEON_KERNELS
  if (isa_supported(CpuIsa::kNeon)) sets.push_back(&kernels::neon_kernels());
  if (isa_supported(CpuIsa::kNeonDot)) sets.push_back(&kernels::neondot_kernels());
#endif
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (const int block : {32, 256}) {
    const int64_t n = 4 * 1024;
    std::vector<float> x(n);
    for (auto& v : x) v = normal(rng);
    // Blocks of zeros, of one value, of values that land on halves, and a huge one.
    std::fill_n(x.begin(), block, 0.0f);
    std::fill_n(x.begin() + block, block, -1.5f);
    for (int j = 0; j < block; ++j) x[size_t(2 * block + j)] = (j - block / 2) * 0.5f;
    x[size_t(3 * block)] = 1e30f;
    std::vector<int8_t> q0(n), q1(n);
    std::vector<float> d0(n / block), d1(n / block);
    std::vector<int32_t> s0(n / 16), s1(n / 16);
    kernels::quantize_activations_portable(x.data(), n, block, q0.data(), d0.data(), s0.data());
    for (const kernels::KernelSet* ks : sets) {
      if (!ks->quantize_activations) continue;
      ks->quantize_activations(x.data(), n, block, q1.data(), d1.data(), s1.data());
      EXPECT_EQ(q0, q1) << "block " << block;
      EXPECT_EQ(d0, d1) << "block " << block;
      EXPECT_EQ(s0, s1) << "block " << block;
    }
  }
}

// The NEON kernels give the portable kernels' bits (matmul_neon.inc: exact integer dot products,
// the blocks' scaled sums accumulated as the portable kernels accumulate them, the prefill's
// fused multiply-adds in the same order), for rows of whole groups of four blocks and with a
// tail, one token, several (up to four share a pass over a row), and a prefill batch (float
// rows: the prefill only). The neondot level's prefill of quantized weights is its int8
// prefill, which rounds the activations as the portable float prefill does not: MatmulTest
// bounds it, and the float rows' prefill still gives the portable bits there.
TEST(Matmul, NeonKernelsGiveThePortableKernelsBits) {
  if (!isa_supported(CpuIsa::kNeon)) GTEST_SKIP() << "no NEON here";
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  ThreadPool pool(1);
  const GgmlType types[] = {GgmlType::F32,  GgmlType::F16,    GgmlType::Q8_0,   GgmlType::Q4_0,
                            GgmlType::Q4_1, GgmlType::Q5_0,   GgmlType::Q5_1,   GgmlType::IQ4_NL,
                            GgmlType::IQ4_XS, GgmlType::Q2_K, GgmlType::Q3_K,   GgmlType::Q4_K,
                            GgmlType::Q5_K, GgmlType::Q6_K};
  for (const GgmlType type : types) {
    const bool k_blocks = type == GgmlType::IQ4_XS || type == GgmlType::Q2_K ||
                          type == GgmlType::Q3_K || type == GgmlType::Q4_K ||
                          type == GgmlType::Q5_K || type == GgmlType::Q6_K;
    for (const int64_t cols : {96, 160, 256, 1280}) {
      if (k_blocks && cols % kQK_K != 0) continue;
      const int64_t rows = 7;
      const auto w = random_weights(type, rows, cols, rng);
      const WeightMatrix m{type, rows, cols, w.data(), ggml_row_bytes(type, cols)};
      const bool float_rows = type == GgmlType::F32 || type == GgmlType::F16;
      for (const int64_t n : {int64_t{1}, int64_t{3}, int64_t{5}, kMatmulDecodeMaxTokens,
                              kMatmulDecodeMaxTokens + 5}) {
        // Float rows' decode sums in four vector accumulators, not in the portable order.
        if (float_rows && n <= kMatmulDecodeMaxTokens) continue;
        std::vector<float> x(size_t(n * cols)), portable(size_t(n * rows)), neon(portable.size());
        for (float& v : x) v = value(rng);
        matmul(m, x.data(), n, portable.data(), pool, CpuIsa::kScalar);
        for (const CpuIsa isa : {CpuIsa::kNeon, CpuIsa::kNeonDot}) {
          if (!isa_supported(isa)) continue;
          if (n > kMatmulDecodeMaxTokens && matmul_quantizes_activations(type, n, isa)) continue;
          matmul(m, x.data(), n, neon.data(), pool, isa);
          EXPECT_EQ(std::memcmp(portable.data(), neon.data(), portable.size() * sizeof(float)), 0)
              << ggml_type_name(type) << " " << cols << " columns, " << n << " tokens, "
              << isa_name(isa);
        }
      }
    }
  }
}

// The neondot level's prefill of every quantized type takes the int8 path (so that MatmulTest
// bounds it as such) and float rows the float path; the plain NEON level has no int8 prefill.
TEST(Matmul, NeonDotPrefillIsInt8ForQuantizedWeights) {
  if (!isa_supported(CpuIsa::kNeonDot)) GTEST_SKIP() << "no NEON dot products here";
  for (const GgmlType type :
       {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
        GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
        GgmlType::Q5_K, GgmlType::Q6_K}) {
    EXPECT_TRUE(matmul_quantizes_activations(type, 64, CpuIsa::kNeonDot)) << ggml_type_name(type);
    EXPECT_FALSE(matmul_quantizes_activations(type, 64, CpuIsa::kNeon)) << ggml_type_name(type);
  }
  EXPECT_FALSE(matmul_quantizes_activations(GgmlType::F16, 64, CpuIsa::kNeonDot));
}

// The types matmul_pack packs.
constexpr GgmlType kPackedTypes[] = {GgmlType::Q8_0,   GgmlType::Q4_0, GgmlType::Q4_1,
                                     GgmlType::Q5_0,   GgmlType::Q5_1, GgmlType::IQ4_NL,
                                     GgmlType::IQ4_XS, GgmlType::Q2_K, GgmlType::Q3_K,
                                     GgmlType::Q4_K,   GgmlType::Q5_K, GgmlType::Q6_K};

// Packed weights hold the file's values: each row read back from a packed matrix is the file's
// row dequantized, bit for bit, the zero rows that pad the last group included in none.
TEST(MatmulPacked, RowsReadBackAsTheFileHasThem) {
  if (!isa_supported(CpuIsa::kAvx512)) GTEST_SKIP() << "this CPU lacks avx512";
  ThreadPool pool(2);
  for (GgmlType type : kPackedTypes) {
    SCOPED_TRACE(ggml_type_name(type));
    std::mt19937 rng(7 + static_cast<unsigned>(type));
    const bool k_quant = ggml_type_traits(type).block_elems == kQK_K;
    const int64_t rows = 45, cols = k_quant ? 512 : 96;
    const auto data = random_weights(type, rows, cols, rng);
    const WeightMatrix w{type, rows, cols, data.data(), ggml_row_bytes(type, cols)};
    ASSERT_TRUE(matmul_packs(w, CpuIsa::kAvx512));
    // Two groups, the second padded; Q4_K, Q5_K and IQ4_XS's scales take a little more room
    // unpacked, the other types (Q2_K and Q3_K's scales as stored) as much as the file's rows.
    EXPECT_EQ(matmul_packed_bytes(w), type == GgmlType::Q4_K     ? 2 * 2 * 4736
                                      : type == GgmlType::Q5_K   ? 2 * 2 * 5760
                                      : type == GgmlType::IQ4_XS ? 2 * 2 * 4416
                                                                 : 64 * w.row_bytes);
    std::vector<std::byte> storage;
    const WeightMatrix packed = layouts(w, CpuIsa::kAvx512, pool, storage).back();
    std::vector<float> expected(cols), got(cols);
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(type, data.data() + r * w.row_bytes, expected.data(), cols);
      matmul_packed_row(packed, r, got.data());
      ASSERT_EQ(std::memcmp(expected.data(), got.data(), cols * sizeof(float)), 0) << "row " << r;
    }
  }
}

// The int8 prefill reads a packed group as the panels it would unpack from the file's rows, so
// both layouts give the same sums bit for bit; decode on packed weights gives each token what
// it gives alone, with rows split between 1 to 3 threads at any 16-row boundary. On every level
// that packs the type.
TEST(MatmulPacked, PrefillAsFromTheFileAndDecodeTokenByToken) {
  int checked = 0;
  for (const CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512})
    for (GgmlType type : kPackedTypes) {
      if (!isa_supported(isa)) continue;
      SCOPED_TRACE(std::string(ggml_type_name(type)) + " at " + std::string(isa_name(isa)));
      std::mt19937 rng(11 + static_cast<unsigned>(type));
      const bool k_quant = ggml_type_traits(type).block_elems == kQK_K;
      const int64_t rows = 77, cols = k_quant ? 768 : 288;
      const auto data = random_weights(type, rows, cols, rng);
      const WeightMatrix w{type, rows, cols, data.data(), ggml_row_bytes(type, cols)};
      if (!matmul_packs(w, isa)) continue;
      ++checked;
      ThreadPool pool(2);
      std::vector<std::byte> storage;
      const WeightMatrix packed = layouts(w, isa, pool, storage).back();
      std::normal_distribution<float> normal(0.0f, 1.0f);
      const int64_t n = 40;
      std::vector<float> x(n * cols);
      for (auto& v : x) v = normal(rng);

      std::vector<float> from_file(n * rows), from_packed(n * rows);
      matmul(w, x.data(), n, from_file.data(), pool, isa, Tokens::kBatch);
      matmul(packed, x.data(), n, from_packed.data(), pool, isa, Tokens::kBatch);
      EXPECT_EQ(std::memcmp(from_file.data(), from_packed.data(), from_file.size() * sizeof(float)),
                0);

      const int64_t steps = kMatmulDecodeMaxTokens;
      std::vector<float> batch(steps * rows);
      matmul(packed, x.data(), steps, batch.data(), pool, isa, Tokens::kSteps);
      for (int threads = 1; threads <= 3; ++threads) {
        ThreadPool split(threads);
        for (int64_t t = 0; t < steps; ++t) {
          std::vector<float> alone(rows);
          matmul(packed, x.data() + t * cols, 1, alone.data(), split, isa);
          ASSERT_EQ(std::memcmp(alone.data(), batch.data() + t * rows, rows * sizeof(float)), 0)
              << "token " << t << " on " << threads << " threads";
        }
      }
    }
  if (checked == 0) GTEST_SKIP() << "no level of this CPU packs weights";
}

TEST(MatmulPacked, OnlyLevelsWithTheKernelsPackAndOnlyTheirTypes) {
  std::vector<std::byte> data(ggml_row_bytes(GgmlType::F16, 256));
  const WeightMatrix k{GgmlType::F16, 1, 256, data.data(), data.size()};
  EXPECT_FALSE(matmul_packs(k, CpuIsa::kAvx512));
  const WeightMatrix q{GgmlType::Q8_0, 1, 32, data.data(), ggml_row_bytes(GgmlType::Q8_0, 32)};
  // Q8_0, IQ4_NL and IQ4_XS at every vector level: at AVX2 the kernels take their signed
  // values (maddubs would saturate on the stored bytes, value + 128).
  EXPECT_EQ(matmul_packs(q, CpuIsa::kAvx2), isa_supported(CpuIsa::kAvx2));
  EXPECT_EQ(matmul_packs(q, CpuIsa::kAvxVnni), isa_supported(CpuIsa::kAvxVnni));
  EXPECT_FALSE(matmul_packs(q, CpuIsa::kScalar));
  EXPECT_EQ(matmul_packs(q, CpuIsa::kAvx512), isa_supported(CpuIsa::kAvx512));
  for (GgmlType type : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
    const WeightMatrix nl{type, 1, 256, data.data(), ggml_row_bytes(type, 256)};
    EXPECT_EQ(matmul_packs(nl, CpuIsa::kAvx2), isa_supported(CpuIsa::kAvx2));
    EXPECT_FALSE(matmul_packs(nl, CpuIsa::kScalar));
    EXPECT_EQ(matmul_packs(nl, CpuIsa::kAvxVnni), isa_supported(CpuIsa::kAvxVnni));
    EXPECT_EQ(matmul_packs(nl, CpuIsa::kAvx512), isa_supported(CpuIsa::kAvx512));
  }
  // The 256-bit levels pack the other types, float weights (like AVX-512) not.
  const WeightMatrix q4{GgmlType::Q4_0, 1, 32, data.data(), ggml_row_bytes(GgmlType::Q4_0, 32)};
  EXPECT_EQ(matmul_packs(q4, CpuIsa::kAvx2), isa_supported(CpuIsa::kAvx2));
  EXPECT_FALSE(matmul_packs(q4, CpuIsa::kScalar));
  std::vector<std::byte> q4k_data(ggml_row_bytes(GgmlType::Q4_K, 256));
  const WeightMatrix q4k{GgmlType::Q4_K, 1, 256, q4k_data.data(), q4k_data.size()};
  EXPECT_EQ(matmul_packs(q4k, CpuIsa::kAvx2), isa_supported(CpuIsa::kAvx2));
  EXPECT_EQ(matmul_packs(q4k, CpuIsa::kAvxVnni), isa_supported(CpuIsa::kAvxVnni));
  EXPECT_EQ(matmul_packs(q4k, CpuIsa::kAvx512), isa_supported(CpuIsa::kAvx512));
  std::vector<std::byte> q5k_data(ggml_row_bytes(GgmlType::Q5_K, 256));
  const WeightMatrix q5k{GgmlType::Q5_K, 1, 256, q5k_data.data(), q5k_data.size()};
  EXPECT_EQ(matmul_packs(q5k, CpuIsa::kAvx2), isa_supported(CpuIsa::kAvx2));
  EXPECT_EQ(matmul_packs(q5k, CpuIsa::kAvx512), isa_supported(CpuIsa::kAvx512));
  for (GgmlType type : {GgmlType::Q2_K, GgmlType::Q3_K}) {
    std::vector<std::byte> q23k_data(ggml_row_bytes(type, 256));
    const WeightMatrix q23k{type, 1, 256, q23k_data.data(), q23k_data.size()};
    EXPECT_EQ(matmul_packs(q23k, CpuIsa::kAvx2), isa_supported(CpuIsa::kAvx2));
    EXPECT_EQ(matmul_packs(q23k, CpuIsa::kAvxVnni), isa_supported(CpuIsa::kAvxVnni));
    EXPECT_EQ(matmul_packs(q23k, CpuIsa::kAvx512), isa_supported(CpuIsa::kAvx512));
    EXPECT_FALSE(matmul_packs(q23k, CpuIsa::kScalar));
  }
  EXPECT_FALSE(matmul_packs(k, CpuIsa::kAvx2));
  ThreadPool pool(1);
  std::vector<std::byte> out(64 * 1024);
  EXPECT_THROW(matmul_pack(k, out.data(), pool), std::invalid_argument);
}

TEST(Matmul, RejectsUnsupportedTypesAndPartialBlocks) {
  ThreadPool pool(1);
  std::vector<std::byte> raw(4096);
  std::vector<float> x(512), y(8);
  const WeightMatrix iq2{GgmlType::IQ2_XXS, 1, 256, raw.data(), 66};
  EXPECT_THROW(matmul(iq2, x.data(), 1, y.data(), pool), std::invalid_argument);
  const WeightMatrix partial{GgmlType::Q8_0, 1, 40, raw.data(), 68};
  EXPECT_THROW(matmul(partial, x.data(), 1, y.data(), pool), std::invalid_argument);
}

}  // namespace
}  // namespace ghostline::engine::cpu
