#include "engine/gguf/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/ggml_type.h"
#include "engine/gguf/quantize.h"
#include "gguf_tensor_locator.h"

namespace ghostline::engine::gguf {
namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

class DequantReference : public ::testing::TestWithParam<std::string> {};

// Rows 0, 1 and the last row of a few tensors of each shared model, dequantized by llama.cpp,
// must come out bit for bit the same.
TEST_P(DequantReference, MatchesLlamaCppBitForBit) {
  const std::string base = "../shared/data/models/" + GetParam();
  std::ifstream json_in(base + ".dequant.json");
  ASSERT_TRUE(json_in) << "missing " << base << ".dequant.json";
  const auto ref = nlohmann::json::parse(json_in);
  const testing::GgufTensorLocator gguf(base + ".gguf");

  int rows_checked = 0;
  for (const auto& [name, entry] : ref.items()) {
    SCOPED_TRACE(name);
    const auto& info = gguf.tensor(name);
    const auto type = static_cast<GgmlType>(info.type);
    ASSERT_EQ(ggml_type_name(type), entry["type"].get<std::string>());
    const int64_t rows = entry["shape_rows_cols"][0];
    const int64_t cols = entry["shape_rows_cols"][1];
    ASSERT_EQ(static_cast<int64_t>(info.dims[0]), cols);
    ASSERT_EQ(static_cast<int64_t>(info.dims[1]), rows);
    const size_t row_bytes = ggml_row_bytes(type, cols);
    ASSERT_LE(info.offset + row_bytes * rows, gguf.file_size());

    std::vector<float> out(cols);
    for (const auto& [row_key, values] : entry["rows"].items()) {
      const int64_t r = std::stoll(row_key);
      dequantize_row(type, gguf.data(info) + r * row_bytes, out.data(), cols);
      ASSERT_EQ(static_cast<int64_t>(values.size()), cols);
      int mismatches = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const float expected = values[c].get<float>();
        if (bits_of(out[c]) != bits_of(expected) && ++mismatches <= 5)
          ADD_FAILURE() << "row " << r << " col " << c << ": " << out[c] << " != " << expected;
      }
      EXPECT_EQ(mismatches, 0) << "row " << r;
      ++rows_checked;
    }
  }
  EXPECT_GE(rows_checked, 15);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, DequantReference,
                         ::testing::Values("ref-llama-spm-f16", "ref-llama-spm-q4_k_m",
                                           "ref-qwen2-dscoder-q8_0", "ref-qwen2-dscoder-q4_0",
                                           "ref-qwen2-dscoder-q6_k", "ref-qwen2-dscoder-q4_1",
                                           "ref-qwen2-dscoder-q5_0", "ref-qwen2-dscoder-q5_1",
                                           "ref-qwen2-dscoder-iq4_nl", "ref-qwen2-dscoder-iq4_xs",
                                           "ref-qwen2-w384-q4_k_m", "ref-starcoder2-q8_0",
                                           "ref-gemma-q8_0"));

// quantize_row then dequantize_row: every value within about half a quantization step of the
// block's scale (bounds from the number of levels of each format: 2^bits steps over the range,
// plus the rounding of 4- to 6-bit sub-block scales), which also checks that each writer and
// reader agree on where every bit lives.
class QuantizeRoundTrip : public ::testing::TestWithParam<std::pair<GgmlType, double>> {};

TEST_P(QuantizeRoundTrip, ValuesComeBackWithinTheFormatsStep) {
  const auto [type, max_rel_rms] = GetParam();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n = 4096;
  std::vector<float> x(n), back(n);
  for (auto& v : x) v = normal(rng);
  std::vector<std::byte> q(ggml_row_bytes(type, n));
  quantize_row(type, x.data(), q.data(), n);
  dequantize_row(type, q.data(), back.data(), n);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += (back[i] - x[i]) * (back[i] - x[i]);
    norm += x[i] * x[i];
  }
  EXPECT_LE(std::sqrt(err / norm), max_rel_rms) << ggml_type_name(type);
  EXPECT_GE(std::sqrt(err / norm), max_rel_rms / 20) << "suspiciously exact";
}

// Uniform rounding over a range of R with L levels errs by R / L / sqrt(12) rms; for normal
// blocks of 32 (range about 4.5 sigma) that is 0.08 sigma at 16 levels; the bounds allow
// about 1.5x for scale rounding.
INSTANTIATE_TEST_SUITE_P(
    Types, QuantizeRoundTrip,
    ::testing::Values(std::pair{GgmlType::Q8_0, 0.01}, std::pair{GgmlType::Q4_0, 0.13},
                      std::pair{GgmlType::Q4_1, 0.11}, std::pair{GgmlType::Q5_0, 0.065},
                      std::pair{GgmlType::Q5_1, 0.055}, std::pair{GgmlType::IQ4_NL, 0.13},
                      std::pair{GgmlType::IQ4_XS, 0.14}, std::pair{GgmlType::Q2_K, 0.5},
                      std::pair{GgmlType::Q3_K, 0.25}, std::pair{GgmlType::Q4_K, 0.13},
                      std::pair{GgmlType::Q5_K, 0.07}, std::pair{GgmlType::Q6_K, 0.035}),
    [](const auto& info) { return std::string(ggml_type_name(info.param.first)); });

// Q2_K and Q3_K have no llama.cpp reference file: one block written by hand from the format's
// definition, read back value by value.
TEST(DequantizeRow, Q3KBlockFromTheFormatDefinition) {
  BlockQ3_K b{};
  b.d = fp32_to_fp16(0.5f);
  // 6-bit scales s[g] = g + 20 (so s - 32 = g - 12): low 4 bits in bytes 0-7 (groups 8-15 in
  // the high nibbles), high 2 bits of group g at bits 2 * (g / 4) of byte 8 + g % 4.
  for (int g = 0; g < 16; ++g) {
    const int s6 = g + 20;
    b.scales[g % 8] |= uint8_t((s6 & 0xF) << (4 * (g / 8)));
    b.scales[8 + g % 4] |= uint8_t((s6 >> 4) << (2 * (g / 4)));
  }
  // Value v: q = v % 8 (q - 4 in [-4, 3]); low 2 bits at bits 2 * ((v % 128) / 32) of
  // qs[32 * (v / 128) + v % 32], the third bit at bit v / 32 of hmask[v % 32].
  for (int v = 0; v < kQK_K; ++v) {
    const int q = v % 8;
    b.qs[32 * (v / 128) + v % 32] |= uint8_t((q & 3) << (2 * ((v % 128) / 32)));
    if (q & 4) b.hmask[v % 32] |= uint8_t(1 << (v / 32));
  }
  float out[kQK_K];
  dequantize_row(GgmlType::Q3_K, reinterpret_cast<const std::byte*>(&b), out, kQK_K);
  for (int v = 0; v < kQK_K; ++v)
    ASSERT_EQ(out[v], 0.5f * float(v / 16 - 12) * float(v % 8 - 4)) << "value " << v;
}

TEST(DequantizeRow, Q2KBlockFromTheFormatDefinition) {
  BlockQ2_K b{};
  b.d = fp32_to_fp16(0.25f);
  b.dmin = fp32_to_fp16(0.125f);
  for (int g = 0; g < 16; ++g) b.scales[g] = uint8_t((g % 16) | ((15 - g) << 4));
  for (int v = 0; v < kQK_K; ++v)
    b.qs[32 * (v / 128) + v % 32] |= uint8_t(((v / 3) % 4) << (2 * ((v % 128) / 32)));
  float out[kQK_K];
  dequantize_row(GgmlType::Q2_K, reinterpret_cast<const std::byte*>(&b), out, kQK_K);
  for (int v = 0; v < kQK_K; ++v) {
    const int g = v / 16;
    ASSERT_EQ(out[v], 0.25f * float(g) * float((v / 3) % 4) - 0.125f * float(15 - g))
        << "value " << v;
  }
}

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) << h;
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
      continue;
    }
    EXPECT_EQ(fp32_to_fp16(f), h) << "half 0x" << std::hex << h;
  }
}

// The compiler's half type: _Float16 on x86 (GCC 12 has no _Float16 in C++ on aarch64), __fp16
// on aarch64, where it is IEEE binary16 and converts with one rounding (fcvt).
#if defined(__aarch64__)
using CompilerHalf = __fp16;
#else
using CompilerHalf = _Float16;
#endif

TEST(Fp16, ConversionMatchesCompilerHalfType) {
  // The compiler's half conversions are IEEE round-to-nearest-even: an independent oracle.
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t b = any_bits(rng);
    if (i % 2) b = (b & 0x87FFFFFFu) | 0x30000000u;  // concentrate on the half's range
    float f;
    std::memcpy(&f, &b, sizeof f);
    if (std::isnan(f)) continue;
    const CompilerHalf h = static_cast<CompilerHalf>(f);
    uint16_t expected;
    std::memcpy(&expected, &h, sizeof expected);
    ASSERT_EQ(fp32_to_fp16(f), expected) << "float bits 0x" << std::hex << b;
    ASSERT_EQ(bits_of(fp16_to_fp32(expected)), bits_of(static_cast<float>(h)));
  }
}

TEST(Bf16, ConversionRoundsToNearestEven) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0xC040), -3.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // halfway, odd below: rounds up
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::nanf("")))));
  const uint16_t raw[] = {0x3F80, 0xC040};
  float out[2];
  dequantize_row(GgmlType::BF16, reinterpret_cast<const std::byte*>(raw), out, 2);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -3.0f);
}

// Packs 6-bit scales/mins the way the K-quant format defines them (independent of k_scale_min).
void pack_k_scales(const uint8_t sc[8], const uint8_t m[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = (sc[j] & 63) | ((sc[j + 4] >> 4) << 6);
    out[j + 4] = (m[j] & 63) | ((m[j + 4] >> 4) << 6);
    out[j + 8] = (sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4);
  }
}

TEST(Q5K, DequantizesFromTheFormatDefinition) {
  std::mt19937 rng(11);
  BlockQ5_K block{};
  uint8_t sc[8], m[8], q[kQK_K];
  for (int j = 0; j < 8; ++j) {
    sc[j] = rng() % 64;
    m[j] = rng() % 64;
  }
  for (auto& v : q) v = rng() % 32;
  block.d = fp32_to_fp16(0.0123f);
  block.dmin = fp32_to_fp16(0.0041f);
  pack_k_scales(sc, m, block.scales);
  // Value i of sub-block s (0..7): low nibble in qs[32 * (s / 2) + i], low half for even s;
  // fifth bit in bit s of qh[i].
  for (int s = 0; s < 8; ++s) {
    for (int i = 0; i < 32; ++i) {
      const uint8_t v = q[32 * s + i];
      block.qs[32 * (s / 2) + i] |= (s % 2 == 0) ? (v & 0xF) : ((v & 0xF) << 4);
      block.qh[i] |= ((v >> 4) & 1) << s;
    }
  }
  float out[kQK_K];
  dequantize_row(GgmlType::Q5_K, reinterpret_cast<const std::byte*>(&block), out, kQK_K);
  const float d = fp16_to_fp32(block.d), dmin = fp16_to_fp32(block.dmin);
  for (int s = 0; s < 8; ++s) {
    for (int i = 0; i < 32; ++i) {
      const float expected = (d * sc[s]) * q[32 * s + i] - dmin * m[s];
      ASSERT_EQ(out[32 * s + i], expected) << "sub-block " << s << " value " << i;
    }
  }
}

TEST(Q4K, ScaleUnpackingInvertsPacking) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 100; ++trial) {
    uint8_t sc[8], m[8], packed[12];
    for (int j = 0; j < 8; ++j) {
      sc[j] = rng() % 64;
      m[j] = rng() % 64;
    }
    pack_k_scales(sc, m, packed);
    for (int j = 0; j < 8; ++j) {
      uint8_t s, mm;
      k_scale_min(j, packed, s, mm);
      ASSERT_EQ(s, sc[j]);
      ASSERT_EQ(mm, m[j]);
    }
  }
}

TEST(Q8_0, QuantizeRoundTripIsWithinHalfAStep) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> x(kQK8_0 * 8);
  for (auto& v : x) v = dist(rng);
  for (int j = 0; j < kQK8_0; ++j) x[j] = 0.0f;  // an all-zero block must give d = 0, q = 0
  std::vector<BlockQ8_0> q(8);
  quantize_row_q8_0(x.data(), q.data(), static_cast<int64_t>(x.size()));
  std::vector<float> back(x.size());
  dequantize_row(GgmlType::Q8_0, reinterpret_cast<const std::byte*>(q.data()), back.data(),
                 static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = fp16_to_fp32(q[i / kQK8_0].d);
    EXPECT_LE(std::fabs(back[i] - x[i]), 0.5f * d * 1.01f + 1e-6f) << i;
  }
  EXPECT_EQ(q[0].d, 0);
}

TEST(Q8_K, QuantizeFillsBlockSums) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> x(kQK_K * 2);
  for (auto& v : x) v = dist(rng);
  std::vector<BlockQ8_K> q(2);
  quantize_row_q8_k(x.data(), q.data(), static_cast<int64_t>(x.size()));
  for (int b = 0; b < 2; ++b) {
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += q[b].qs[16 * g + j];
      EXPECT_EQ(q[b].bsums[g], sum);
    }
    for (int j = 0; j < kQK_K; ++j)
      EXPECT_LE(std::fabs(q[b].d * q[b].qs[j] - x[b * kQK_K + j]), 0.5f * q[b].d * 1.01f);
  }
}

TEST(DequantizeRow, RejectsPartialBlocksAndUnsupportedTypes) {
  std::vector<std::byte> raw(1024);
  std::vector<float> out(512);
  EXPECT_THROW(dequantize_row(GgmlType::Q4_K, raw.data(), out.data(), 100), std::invalid_argument);
  EXPECT_THROW(dequantize_row(GgmlType::IQ2_XXS, raw.data(), out.data(), 256),
               std::invalid_argument);
}

}  // namespace
}  // namespace ghostline::engine::gguf
