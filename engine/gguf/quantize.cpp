#include "engine/gguf/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/gguf/quant.h"

namespace ghostline::engine::gguf {
namespace {

int nearest(float v) {
  return static_cast<int>(std::nearbyint(v));
}

// The fp16 the block stores, and its value as the dequantizer reads it.
float stored_half(float v, uint16_t& h) {
  h = fp32_to_fp16(v);
  return fp16_to_fp32(h);
}

float inverse(float d) {
  return d != 0.0f ? 1.0f / d : 0.0f;
}

// The value of largest magnitude, with its sign.
float signed_absmax(const float* x, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

// Q4_0 / Q5_0: d = m / -2^(bits-1) with m the value of largest magnitude, q = x / d + offset.
template <int kBits, typename Block>
void quantize_symmetric_32(const float* x, Block& y) {
  constexpr int kOffset = 1 << (kBits - 1), kMax = (1 << kBits) - 1;
  const float d = stored_half(signed_absmax(x, kQK8_0) / -kOffset, y.d);
  const float id = inverse(d);
  uint32_t qh = 0;
  for (int j = 0; j < kQK8_0 / 2; ++j) {
    const int q0 = std::clamp(nearest(x[j] * id) + kOffset, 0, kMax);
    const int q1 = std::clamp(nearest(x[j + kQK8_0 / 2] * id) + kOffset, 0, kMax);
    y.qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + kQK8_0 / 2);
  }
  if constexpr (kBits == 5) std::memcpy(y.qh, &qh, sizeof qh);
}

// Q4_1 / Q5_1: x = d * q + m over the block's range [min, max].
template <int kBits, typename Block>
void quantize_affine_32(const float* x, Block& y) {
  constexpr int kMax = (1 << kBits) - 1;
  const float lo = *std::min_element(x, x + kQK8_0), hi = *std::max_element(x, x + kQK8_0);
  const float d = stored_half((hi - lo) / kMax, y.d);
  const float m = stored_half(lo, y.m);
  const float id = inverse(d);
  uint32_t qh = 0;
  for (int j = 0; j < kQK8_0 / 2; ++j) {
    const int q0 = std::clamp(nearest((x[j] - m) * id), 0, kMax);
    const int q1 = std::clamp(nearest((x[j + kQK8_0 / 2] - m) * id), 0, kMax);
    y.qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
    qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + kQK8_0 / 2);
  }
  if constexpr (kBits == 5) std::memcpy(y.qh, &qh, sizeof qh);
}

// Index of the IQ4_NL grid value nearest to v.
uint8_t nearest_grid(float v) {
  int best = 0;
  for (int i = 1; i < 16; ++i)
    if (std::fabs(v - kIq4nlValues[i]) < std::fabs(v - kIq4nlValues[best])) best = i;
  return static_cast<uint8_t>(best);
}

// 32 values on the grid scaled by d, nibbles in Q4_0's order.
void quantize_grid_32(const float* x, float d, uint8_t* qs) {
  const float id = inverse(d);
  for (int j = 0; j < 16; ++j)
    qs[j] = static_cast<uint8_t>(nearest_grid(x[j] * id) | (nearest_grid(x[j + 16] * id) << 4));
}

void quantize_iq4_nl(const float* x, BlockIq4Nl& y) {
  // The grid spans [-127, 113]: map the value of largest magnitude onto -127.
  const float d = stored_half(signed_absmax(x, kQK8_0) / -127.0f, y.d);
  quantize_grid_32(x, d, y.qs);
}

void quantize_iq4_xs(const float* x, BlockIq4Xs& y) {
  float scale[8], amax = 0.0f;
  for (int s = 0; s < 8; ++s) {
    scale[s] = signed_absmax(x + 32 * s, 32) / -127.0f;
    amax = std::max(amax, std::fabs(scale[s]));
  }
  const float d = stored_half(amax / 31.0f, y.d);
  const float id = inverse(d);
  y.scales_h = 0;
  std::memset(y.scales_l, 0, sizeof y.scales_l);
  for (int s = 0; s < 8; ++s) {
    const int ls = std::clamp(nearest(scale[s] * id), -32, 31) + 32;
    y.scales_l[s / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (s % 2)));
    y.scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * s));
    quantize_grid_32(x + 32 * s, d * (ls - 32), y.qs + 16 * s);
  }
}

// Packs eight 6-bit scales and mins the way k_scale_min unpacks them.
void pack_k_scales(const uint8_t sc[8], const uint8_t m[8], uint8_t out[kKScaleBytes]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// Sub-block scales and mins (x = scale * q - min over [min(0, lo), hi]) as 6- or 4-bit
// multiples of two super-block factors.
struct AffineGroups {
  float scale[16], min[16];
};

AffineGroups affine_groups(const float* x, int groups, int group_size, int levels) {
  AffineGroups g{};
  for (int i = 0; i < groups; ++i) {
    const float* v = x + i * group_size;
    const float lo = std::min(0.0f, *std::min_element(v, v + group_size));
    const float hi = *std::max_element(v, v + group_size);
    g.scale[i] = (hi - lo) / levels;
    g.min[i] = -lo;
  }
  return g;
}

// Q4_K and Q5_K: eight sub-blocks of 32 with 6-bit scales and mins; Q5_K's fifth bits in qh
// (bit 2i of qh[l] for value l of sub-block 2i, bit 2i + 1 for sub-block 2i + 1).
template <bool kFiveBit, typename Block>
void quantize_q45_k(const float* x, Block& y) {
  constexpr int kMax = kFiveBit ? 31 : 15;
  const AffineGroups g = affine_groups(x, 8, 32, kMax);
  const float d = stored_half(*std::max_element(g.scale, g.scale + 8) / 63.0f, y.d);
  const float dmin = stored_half(*std::max_element(g.min, g.min + 8) / 63.0f, y.dmin);
  uint8_t sc[8], m[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = static_cast<uint8_t>(std::clamp(nearest(g.scale[s] * inverse(d)), 0, 63));
    m[s] = static_cast<uint8_t>(std::clamp(nearest(g.min[s] * inverse(dmin)), 0, 63));
  }
  pack_k_scales(sc, m, y.scales);
  uint8_t q[kQK_K];
  for (int v = 0; v < kQK_K; ++v) {
    const int s = v / 32;
    q[v] = static_cast<uint8_t>(
        std::clamp(nearest((x[v] + dmin * m[s]) * inverse(d * sc[s])), 0, kMax));
  }
  // Each 32 bytes: sub-block 2i in the low nibbles, 2i + 1 in the high ones.
  for (int i = 0; i < 4; ++i)
    for (int l = 0; l < 32; ++l)
      y.qs[32 * i + l] =
          static_cast<uint8_t>((q[64 * i + l] & 0xF) | ((q[64 * i + 32 + l] & 0xF) << 4));
  if constexpr (kFiveBit) {
    std::memset(y.qh, 0, sizeof y.qh);
    for (int v = 0; v < kQK_K; ++v) y.qh[v % 32] |= static_cast<uint8_t>((q[v] >> 4) << (v / 32));
  }
}

void quantize_q6_k(const float* x, BlockQ6_K& y) {
  float scale[16], amax = 0.0f;
  for (int g = 0; g < 16; ++g) {
    scale[g] = signed_absmax(x + 16 * g, 16) / -32.0f;
    amax = std::max(amax, std::fabs(scale[g]));
  }
  const float d = stored_half(amax / 127.0f, y.d);
  uint8_t q[kQK_K];
  for (int g = 0; g < 16; ++g) {
    y.scales[g] = static_cast<int8_t>(std::clamp(nearest(scale[g] * inverse(d)), -127, 127));
    const float id = inverse(d * y.scales[g]);
    for (int l = 0; l < 16; ++l)
      q[16 * g + l] = static_cast<uint8_t>(std::clamp(nearest(x[16 * g + l] * id), -32, 31) + 32);
  }
  for (int h = 0; h < 2; ++h) {
    const uint8_t* qv = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      y.ql[64 * h + l] = static_cast<uint8_t>((qv[l] & 0xF) | ((qv[l + 64] & 0xF) << 4));
      y.ql[64 * h + l + 32] = static_cast<uint8_t>((qv[l + 32] & 0xF) | ((qv[l + 96] & 0xF) << 4));
      y.qh[32 * h + l] = static_cast<uint8_t>((qv[l] >> 4) | ((qv[l + 32] >> 4) << 2) |
                                              ((qv[l + 64] >> 4) << 4) | ((qv[l + 96] >> 4) << 6));
    }
  }
}

// 2-bit fields of Q2_K / Q3_K: value 128h + 32s + l at bits 2s of qs[32h + l].
void pack_2bit(const uint8_t q[kQK_K], uint8_t qs[kQK_K / 4]) {
  std::memset(qs, 0, kQK_K / 4);
  for (int v = 0; v < kQK_K; ++v) {
    const int h = v / 128, s = (v % 128) / 32, l = v % 32;
    qs[32 * h + l] |= static_cast<uint8_t>((q[v] & 3) << (2 * s));
  }
}

void quantize_q2_k(const float* x, BlockQ2_K& y) {
  const AffineGroups g = affine_groups(x, 16, 16, 3);
  const float d = stored_half(*std::max_element(g.scale, g.scale + 16) / 15.0f, y.d);
  const float dmin = stored_half(*std::max_element(g.min, g.min + 16) / 15.0f, y.dmin);
  uint8_t q[kQK_K];
  for (int i = 0; i < 16; ++i) {
    const int sc = std::clamp(nearest(g.scale[i] * inverse(d)), 0, 15);
    const int m = std::clamp(nearest(g.min[i] * inverse(dmin)), 0, 15);
    y.scales[i] = static_cast<uint8_t>(sc | (m << 4));
    for (int l = 0; l < 16; ++l)
      q[16 * i + l] = static_cast<uint8_t>(
          std::clamp(nearest((x[16 * i + l] + dmin * m) * inverse(d * sc)), 0, 3));
  }
  pack_2bit(q, y.qs);
}

void quantize_q3_k(const float* x, BlockQ3_K& y) {
  float scale[16], amax = 0.0f;
  for (int g = 0; g < 16; ++g) {
    scale[g] = signed_absmax(x + 16 * g, 16) / -4.0f;
    amax = std::max(amax, std::fabs(scale[g]));
  }
  const float d = stored_half(amax / 31.0f, y.d);
  uint8_t q[kQK_K];
  std::memset(y.scales, 0, sizeof y.scales);
  std::memset(y.hmask, 0, sizeof y.hmask);
  for (int g = 0; g < 16; ++g) {
    const int sc = std::clamp(nearest(scale[g] * inverse(d)), -32, 31);
    const int s6 = sc + 32;
    // Low 4 bits: bytes 0-7 (groups 0-7 low nibble, 8-15 high nibble); high 2 bits: 8-11.
    y.scales[g % 8] |= static_cast<uint8_t>((s6 & 0xF) << (4 * (g / 8)));
    y.scales[8 + g % 4] |= static_cast<uint8_t>((s6 >> 4) << (2 * (g / 4)));
    const float id = inverse(d * sc);
    for (int l = 0; l < 16; ++l) {
      const int v = 16 * g + l;
      q[v] = static_cast<uint8_t>(std::clamp(nearest(x[v] * id), -4, 3) + 4);
      if (q[v] & 4) y.hmask[v % 32] |= static_cast<uint8_t>(1 << (v / 32));
    }
  }
  pack_2bit(q, y.qs);
}

template <typename Block, typename Fn>
void each_block(const float* x, std::byte* dst, int64_t n, int block, Fn fn) {
  auto* y = reinterpret_cast<Block*>(dst);
  for (int64_t b = 0; b < n / block; ++b) fn(x + b * block, y[b]);
}

}  // namespace

bool can_quantize(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

void quantize_row(GgmlType type, const float* x, std::byte* dst, int64_t n) {
  if (!can_quantize(type))
    throw std::invalid_argument("quantize_row: cannot write " + std::string(ggml_type_name(type)));
  const int block = static_cast<int>(ggml_type_traits(type).block_elems);
  if (n % block != 0)
    throw std::invalid_argument("quantize_row: " + std::to_string(n) + " values of type " +
                                std::string(ggml_type_name(type)) +
                                " are not a whole number of blocks of " + std::to_string(block));
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_fp16(x[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case GgmlType::Q8_0:
      quantize_row_q8_0(x, reinterpret_cast<BlockQ8_0*>(dst), n);
      return;
    case GgmlType::Q4_0:
      return each_block<BlockQ4_0>(x, dst, n, block, quantize_symmetric_32<4, BlockQ4_0>);
    case GgmlType::Q5_0:
      return each_block<BlockQ5_0>(x, dst, n, block, quantize_symmetric_32<5, BlockQ5_0>);
    case GgmlType::Q4_1:
      return each_block<BlockQ4_1>(x, dst, n, block, quantize_affine_32<4, BlockQ4_1>);
    case GgmlType::Q5_1:
      return each_block<BlockQ5_1>(x, dst, n, block, quantize_affine_32<5, BlockQ5_1>);
    case GgmlType::IQ4_NL:
      return each_block<BlockIq4Nl>(x, dst, n, block, quantize_iq4_nl);
    case GgmlType::IQ4_XS:
      return each_block<BlockIq4Xs>(x, dst, n, block, quantize_iq4_xs);
    case GgmlType::Q2_K:
      return each_block<BlockQ2_K>(x, dst, n, block, quantize_q2_k);
    case GgmlType::Q3_K:
      return each_block<BlockQ3_K>(x, dst, n, block, quantize_q3_k);
    case GgmlType::Q4_K:
      return each_block<BlockQ4_K>(x, dst, n, block, quantize_q45_k<false, BlockQ4_K>);
    case GgmlType::Q5_K:
      return each_block<BlockQ5_K>(x, dst, n, block, quantize_q45_k<true, BlockQ5_K>);
    case GgmlType::Q6_K:
      return each_block<BlockQ6_K>(x, dst, n, block, quantize_q6_k);
    default:
      return;  // unreachable: checked above
  }
}

}  // namespace ghostline::engine::gguf
