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
#include "gguf_tensor_locator.h"

namespace ghostline::engine::cpu {
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
                                           "ref-qwen2-dscoder-q6_k"));

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

TEST(Fp16, ConversionMatchesCompilerHalfType) {
  // _Float16 conversions are IEEE round-to-nearest-even: an independent oracle.
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t b = any_bits(rng);
    if (i % 2) b = (b & 0x87FFFFFFu) | 0x30000000u;  // concentrate on the half's range
    float f;
    std::memcpy(&f, &b, sizeof f);
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
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
  EXPECT_THROW(dequantize_row(GgmlType::Q2_K, raw.data(), out.data(), 256), std::invalid_argument);
}

}  // namespace
}  // namespace ghostline::engine::cpu
