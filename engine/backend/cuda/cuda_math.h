// The per-element math of the CUDA kernels, written once for the device and the host: nvcc
// compiles these as __host__ __device__ functions, g++ as plain inline C++, so the normal test
// suite checks them on the CPU against the quant code and the reference backend (no GPU needed).
// Each function is the formula as the format or the paper states it; the kernels only decide
// which thread computes which element.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/gguf/ggml_type.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#if defined(__CUDACC__)
#define GHOSTLINE_HD __host__ __device__ __forceinline__
#else
#define GHOSTLINE_HD inline
#endif

namespace ghostline::engine::cuda_math {

// Block sizes of the types the kernels read in place (see engine/gguf/quant.h for layouts).
inline constexpr int kQ8_0Bytes = 34;   // fp16 d, 32 x int8
inline constexpr int kQ4_0Bytes = 18;   // fp16 d, 16 bytes of nibbles
inline constexpr int kQ4_1Bytes = 20;   // fp16 d, fp16 m, 16 bytes of nibbles
inline constexpr int kQ5_0Bytes = 22;   // fp16 d, 4 bytes of fifth bits, 16 bytes of nibbles
inline constexpr int kQ5_1Bytes = 24;   // fp16 d, fp16 m, 4 bytes of fifth bits, 16 of nibbles
inline constexpr int kIq4NlBytes = 18;  // fp16 d, 16 bytes of nibbles (grid indices)
inline constexpr int kIq4XsBytes = 136;  // fp16 d, fp16 scales_h, 4 scales_l, 128 of nibbles
inline constexpr int kQ4_KBytes = 144;  // fp16 d, fp16 dmin, 12 scale bytes, 128 bytes of nibbles
inline constexpr int kQ5_KBytes = 176;  // as Q4_K, with 32 bytes of fifth bits before the nibbles
inline constexpr int kQ6_KBytes = 210;  // 128 ql, 64 qh, 16 int8 scales, fp16 d
inline constexpr int kQK_K = 256;
inline constexpr int kChunk = 32;  // values one lane of the mat-vec kernel dequantizes at once

// Little-endian 16-bit load from any address: GGUF blocks are only byte-aligned in general.
GHOSTLINE_HD uint16_t load_u16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

GHOSTLINE_HD float bits_to_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

GHOSTLINE_HD uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof f);
  return bits;
#endif
}

// IEEE binary16 -> binary32, exact (subnormals, inf and NaN included); on the device, the
// conversion instruction, which is exact too.
GHOSTLINE_HD float half_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0x1F) return bits_to_float(sign | 0x7F800000u | (mant << 13));
  if (exp != 0) return bits_to_float(sign | ((exp + 127 - 15) << 23) | (mant << 13));
  if (mant == 0) return bits_to_float(sign);
  int e = -1;  // subnormal: normalize the mantissa
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400) == 0);
  return bits_to_float(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3FF) << 13));
#endif
}

// binary32 -> binary16, round to nearest even; what the KV cache stores.
GHOSTLINE_HD uint16_t float_to_half(float f) {
  const uint32_t x = float_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7FFFFFFF;
  if (abs > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00 | ((abs >> 13) & 0x3FF));  // NaN
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to inf
  if (abs < 0x38800000) {
    // Subnormal half (or zero): shift the implicit-one mantissa into place, round to even.
    if (abs < 0x33000000) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7FFFFF) | 0x800000;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((abs - 0x38000000) >> 13);
  const uint32_t rem = abs & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

// float_to_half for the fp16 GEMM's activations: finite values past fp16's range (from 65,520
// on, which round to infinity) and the infinities become +-65,504, so that a rare outlier costs
// precision instead of spreading infinities and NaNs through every product it enters. NaN stays
// NaN.
GHOSTLINE_HD uint16_t float_to_half_saturated(float f) {
  const uint32_t x = float_to_bits(f);
  const uint32_t abs = x & 0x7FFFFFFF;
  if (abs >= 0x477FF000 && abs <= 0x7F800000)
    return static_cast<uint16_t>(((x >> 16) & 0x8000) | 0x7BFF);
  return float_to_half(f);
}

GHOSTLINE_HD float bf16_to_float(uint16_t h) {
  return bits_to_float(static_cast<uint32_t>(h) << 16);
}

// Value e of a row stored in each type; `row` is the row's first byte.
GHOSTLINE_HD float dequant_f32(const uint8_t* row, int e) {
  return bits_to_float(static_cast<uint32_t>(load_u16(row + 4 * e)) |
                       (static_cast<uint32_t>(load_u16(row + 4 * e + 2)) << 16));
}
GHOSTLINE_HD float dequant_f16(const uint8_t* row, int e) {
  return half_to_float(load_u16(row + 2 * e));
}
GHOSTLINE_HD float dequant_bf16(const uint8_t* row, int e) {
  return bf16_to_float(load_u16(row + 2 * e));
}

// Q8_0: x = q * d.
GHOSTLINE_HD float dequant_q8_0(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / 32) * kQ8_0Bytes;
  return static_cast<float>(static_cast<int8_t>(b[2 + e % 32])) * half_to_float(load_u16(b));
}

// Q4_0: x = (q - 8) * d; byte j holds value j (low nibble) and value j + 16 (high nibble).
GHOSTLINE_HD float dequant_q4_0(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / 32) * kQ4_0Bytes;
  const int j = e % 32;
  const uint8_t byte = b[2 + j % 16];
  const int q = (j < 16 ? (byte & 0x0F) : (byte >> 4)) - 8;
  return static_cast<float>(q) * half_to_float(load_u16(b));
}

// Q4_1: x = q * d + m, nibbles as in Q4_0.
GHOSTLINE_HD float dequant_q4_1(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / 32) * kQ4_1Bytes;
  const int j = e % 32;
  const uint8_t byte = b[4 + j % 16];
  const int q = j < 16 ? (byte & 0x0F) : (byte >> 4);
  return static_cast<float>(q) * half_to_float(load_u16(b)) + half_to_float(load_u16(b + 2));
}

// The fifth bit of value j of a Q5_0 / Q5_1 block (bit j of the little-endian qh), as 0 or 16.
GHOSTLINE_HD int q5_high(const uint8_t* qh, int j) {
  return ((qh[j / 8] >> (j % 8)) & 1) << 4;
}

// Q5_0: x = (q - 16) * d, q = the Q4_0 nibble with its fifth bit from qh.
GHOSTLINE_HD float dequant_q5_0(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / 32) * kQ5_0Bytes;
  const int j = e % 32;
  const uint8_t byte = b[6 + j % 16];
  const int q = ((j < 16 ? (byte & 0x0F) : (byte >> 4)) | q5_high(b + 2, j)) - 16;
  return static_cast<float>(q) * half_to_float(load_u16(b));
}

// Q5_1: x = q * d + m with the 5-bit q of Q5_0.
GHOSTLINE_HD float dequant_q5_1(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / 32) * kQ5_1Bytes;
  const int j = e % 32;
  const uint8_t byte = b[8 + j % 16];
  const int q = (j < 16 ? (byte & 0x0F) : (byte >> 4)) | q5_high(b + 4, j);
  return static_cast<float>(q) * half_to_float(load_u16(b)) + half_to_float(load_u16(b + 2));
}

// Value q (0..15) of the IQ4_NL / IQ4_XS grid {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13,
// 25, 38, 53, 69, 89, 113}, as bytes of two constants: no table in memory on the device.
GHOSTLINE_HD int iq4_grid(int q) {
  const uint64_t low = 0xF6EADDCFBFAD9881ull, high = 0x7159453526190D01ull;
  return static_cast<int8_t>(static_cast<uint8_t>((q < 8 ? low : high) >> (8 * (q & 7))));
}

// IQ4_NL: x = d * grid[q], nibbles as in Q4_0.
GHOSTLINE_HD float dequant_iq4_nl(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / 32) * kIq4NlBytes;
  const int j = e % 32;
  const uint8_t byte = b[2 + j % 16];
  return half_to_float(load_u16(b)) *
         static_cast<float>(iq4_grid(j < 16 ? (byte & 0x0F) : (byte >> 4)));
}

// The signed 6-bit scale (ls - 32) of sub-block s (0..7) of an IQ4_XS super-block.
GHOSTLINE_HD int iq4_xs_scale(const uint8_t* b, int s) {
  const int low = (b[4 + s / 2] >> (4 * (s % 2))) & 0xF;
  const int high = (load_u16(b + 2) >> (2 * s)) & 3;
  return (low | (high << 4)) - 32;
}

// IQ4_XS: x = (d * ls) * grid[q]; each 16 bytes of qs hold one 32-value sub-block as in Q4_0.
GHOSTLINE_HD float dequant_iq4_xs(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / kQK_K) * kIq4XsBytes;
  const int j = e % kQK_K, s = j / 32, l = j % 32;
  const uint8_t byte = b[8 + 16 * s + l % 16];
  const float dl = half_to_float(load_u16(b)) * static_cast<float>(iq4_xs_scale(b, s));
  return dl * static_cast<float>(iq4_grid(l < 16 ? (byte & 0x0F) : (byte >> 4)));
}

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K super-block (12 packed bytes).
GHOSTLINE_HD void k_scale_min(int j, const uint8_t* q, int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// The scale (d * sc) and offset (dmin * m) of sub-block `sub` (0..7) of a Q4_K or Q5_K
// super-block `b`: x = scale * q - offset.
GHOSTLINE_HD void k_sub_scale(const uint8_t* b, int sub, float& scale, float& offset) {
  int sc, m;
  k_scale_min(sub, b + 4, sc, m);
  scale = half_to_float(load_u16(b)) * static_cast<float>(sc);
  offset = half_to_float(load_u16(b + 2)) * static_cast<float>(m);
}

// Q4_K: x = (d * sc) * q - dmin * m for the 32-value sub-block holding e. Each 64 values share
// 32 bytes of qs: the first 32 in the low nibbles, the next 32 in the high ones.
GHOSTLINE_HD float dequant_q4_k(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / kQK_K) * kQ4_KBytes;
  const int j = e % kQK_K;
  const int group = j / 64, within = j % 64;
  float scale, offset;
  k_sub_scale(b, 2 * group + (within >= 32 ? 1 : 0), scale, offset);
  const uint8_t byte = b[16 + 32 * group + within % 32];
  const int q = within < 32 ? (byte & 0xF) : (byte >> 4);
  return scale * static_cast<float>(q) - offset;
}

// Q5_K: as Q4_K, with the fifth bit of value l of sub-block j at bit j of qh[l].
GHOSTLINE_HD float dequant_q5_k(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / kQK_K) * kQ5_KBytes;
  const int j = e % kQK_K;
  const int sub = j / 32, l = j % 32;
  float scale, offset;
  k_sub_scale(b, sub, scale, offset);
  const uint8_t byte = b[48 + 32 * (sub / 2) + l];
  const int q = ((sub % 2) ? (byte >> 4) : (byte & 0xF)) + (((b[16 + l] >> sub) & 1) << 4);
  return scale * static_cast<float>(q) - offset;
}

// Q6_K: x = d * sc * (q - 32), q = 4 low bits from ql and 2 high bits from qh. Each half of 128
// values uses 64 bytes of ql, 32 of qh and 8 scales; its quarters take the nibbles and bit
// pairs in turn.
GHOSTLINE_HD float dequant_q6_k(const uint8_t* row, int e) {
  const uint8_t* b = row + (e / kQK_K) * kQ6_KBytes;
  const int j = e % kQK_K;
  const int half = j / 128, quarter = (j % 128) / 32, l = j % 32;
  const uint8_t* ql = b + 64 * half;
  const uint8_t* qh = b + 128 + 32 * half;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192) + 8 * half;
  const uint8_t low_byte = ql[l + (quarter & 1) * 32];
  const int low = quarter < 2 ? (low_byte & 0xF) : (low_byte >> 4);
  const int high = (qh[l] >> (2 * quarter)) & 3;
  const int q = (low | (high << 4)) - 32;
  const float d = half_to_float(load_u16(b + 208));
  return d * static_cast<float>(sc[l / 16 + 2 * quarter]) * static_cast<float>(q);
}

// Chunk c of a row (values kChunk * c .. kChunk * c + 31) into w, in order: what one lane of the
// mat-vec kernel dequantizes at a time. Every type's blocks hold whole chunks, so each function
// reads its block's scales once; the values equal the element functions above bit for bit.
GHOSTLINE_HD void chunk_f32(const uint8_t* row, int c, float* w) {
  for (int i = 0; i < kChunk; ++i) w[i] = dequant_f32(row, kChunk * c + i);
}
GHOSTLINE_HD void chunk_f16(const uint8_t* row, int c, float* w) {
  for (int i = 0; i < kChunk; ++i) w[i] = dequant_f16(row, kChunk * c + i);
}
GHOSTLINE_HD void chunk_bf16(const uint8_t* row, int c, float* w) {
  for (int i = 0; i < kChunk; ++i) w[i] = dequant_bf16(row, kChunk * c + i);
}

GHOSTLINE_HD void chunk_q8_0(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + c * kQ8_0Bytes;
  const float d = half_to_float(load_u16(b));
  for (int i = 0; i < kChunk; ++i) w[i] = static_cast<float>(static_cast<int8_t>(b[2 + i])) * d;
}

GHOSTLINE_HD void chunk_q4_0(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + c * kQ4_0Bytes;
  const float d = half_to_float(load_u16(b));
  for (int i = 0; i < 16; ++i) {
    w[i] = static_cast<float>((b[2 + i] & 0x0F) - 8) * d;
    w[i + 16] = static_cast<float>((b[2 + i] >> 4) - 8) * d;
  }
}

GHOSTLINE_HD void chunk_q4_1(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + c * kQ4_1Bytes;
  const float d = half_to_float(load_u16(b)), m = half_to_float(load_u16(b + 2));
  for (int i = 0; i < 16; ++i) {
    w[i] = static_cast<float>(b[4 + i] & 0x0F) * d + m;
    w[i + 16] = static_cast<float>(b[4 + i] >> 4) * d + m;
  }
}

// The 32 fifth bits of a Q5_0 / Q5_1 block as one little-endian word.
GHOSTLINE_HD uint32_t q5_high_bits(const uint8_t* qh) {
  return static_cast<uint32_t>(load_u16(qh)) | (static_cast<uint32_t>(load_u16(qh + 2)) << 16);
}

GHOSTLINE_HD void chunk_q5_0(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + c * kQ5_0Bytes;
  const float d = half_to_float(load_u16(b));
  const uint32_t qh = q5_high_bits(b + 2);
  for (int i = 0; i < 16; ++i) {
    const int q0 = ((b[6 + i] & 0x0F) | (((qh >> i) & 1) << 4)) - 16;
    const int q1 = ((b[6 + i] >> 4) | (((qh >> (i + 16)) & 1) << 4)) - 16;
    w[i] = static_cast<float>(q0) * d;
    w[i + 16] = static_cast<float>(q1) * d;
  }
}

GHOSTLINE_HD void chunk_q5_1(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + c * kQ5_1Bytes;
  const float d = half_to_float(load_u16(b)), m = half_to_float(load_u16(b + 2));
  const uint32_t qh = q5_high_bits(b + 4);
  for (int i = 0; i < 16; ++i) {
    const int q0 = (b[8 + i] & 0x0F) | (((qh >> i) & 1) << 4);
    const int q1 = (b[8 + i] >> 4) | (((qh >> (i + 16)) & 1) << 4);
    w[i] = static_cast<float>(q0) * d + m;
    w[i + 16] = static_cast<float>(q1) * d + m;
  }
}

GHOSTLINE_HD void chunk_iq4_nl(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + c * kIq4NlBytes;
  const float d = half_to_float(load_u16(b));
  for (int i = 0; i < 16; ++i) {
    w[i] = d * static_cast<float>(iq4_grid(b[2 + i] & 0x0F));
    w[i + 16] = d * static_cast<float>(iq4_grid(b[2 + i] >> 4));
  }
}

GHOSTLINE_HD void chunk_iq4_xs(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + (c / 8) * kIq4XsBytes;
  const int s = c % 8;
  const float dl = half_to_float(load_u16(b)) * static_cast<float>(iq4_xs_scale(b, s));
  const uint8_t* qs = b + 8 + 16 * s;
  for (int i = 0; i < 16; ++i) {
    w[i] = dl * static_cast<float>(iq4_grid(qs[i] & 0x0F));
    w[i + 16] = dl * static_cast<float>(iq4_grid(qs[i] >> 4));
  }
}

// Q4_K and Q5_K: chunk c is sub-block c % 8 of super-block c / 8.
GHOSTLINE_HD void chunk_q4_k(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + (c / 8) * kQ4_KBytes;
  const int sub = c % 8;
  float ds, dm;
  k_sub_scale(b, sub, ds, dm);
  const uint8_t* qs = b + 16 + 32 * (sub / 2);
  const int shift = 4 * (sub % 2);
  for (int i = 0; i < kChunk; ++i) w[i] = ds * static_cast<float>((qs[i] >> shift) & 0xF) - dm;
}

GHOSTLINE_HD void chunk_q5_k(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + (c / 8) * kQ5_KBytes;
  const int sub = c % 8;
  float ds, dm;
  k_sub_scale(b, sub, ds, dm);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48 + 32 * (sub / 2);
  const int shift = 4 * (sub % 2);
  for (int i = 0; i < kChunk; ++i) {
    const int q = ((qs[i] >> shift) & 0xF) | (((qh[i] >> sub) & 1) << 4);
    w[i] = ds * static_cast<float>(q) - dm;
  }
}

// Q6_K: chunk c is quarter c % 4 of half (c % 8) / 4 of super-block c / 8.
GHOSTLINE_HD void chunk_q6_k(const uint8_t* row, int c, float* w) {
  const uint8_t* b = row + (c / 8) * kQ6_KBytes;
  const int half = (c % 8) / 4, quarter = c % 4;
  const uint8_t* ql = b + 64 * half + 32 * (quarter & 1);
  const uint8_t* qh = b + 128 + 32 * half;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192) + 8 * half + 2 * quarter;
  const float d = half_to_float(load_u16(b + 208));
  const float d0 = d * static_cast<float>(sc[0]), d1 = d * static_cast<float>(sc[1]);
  const int low_shift = quarter < 2 ? 0 : 4, high_shift = 2 * quarter;
  for (int i = 0; i < kChunk; ++i) {
    const int q = (((ql[i] >> low_shift) & 0xF) | (((qh[i] >> high_shift) & 3) << 4)) - 32;
    w[i] = (i < 16 ? d0 : d1) * static_cast<float>(q);
  }
}

// ---- integer dot products against quantized activations (the int8 mat-vec kernel) ----
//
// The activations are quantized as the CPU backend quantizes them for its decode kernels
// (cpu::kernels::quantize_activations_portable): per block of 32 values for the types of
// 32-value blocks, per 256 for the K-quants and IQ4_XS (q8_activation_block), scale = max |x| /
// 127, q = x / scale rounded half away from zero. A row's dot product is then integer dot
// products of 4 bytes (dp4a) per pair of words, scaled per chunk. Each chunk of 32 values is
// split into four parts of 8: part p holds the chunk's values 4p..4p+3 and 16+4p..16+4p+3, which
// is where the nibble types keep them (byte j: value j low, value j + 16 high).

// Values per activation scale for weights of `type` in the int8 kernel: the CPU backend's block
// (int8_activation_block, ggml_type.h), 0 for the types converted to F16 on upload. Host code,
// and device code only where it is a constant (a kernel's template type).
constexpr int q8_activation_block(GgmlType type) {
  return type == GgmlType::Q2_K || type == GgmlType::Q3_K ? 0 : int8_activation_block(type);
}

// Products and sums that nvcc would otherwise fuse into FMAs: quantization must round as the host
// does.
GHOSTLINE_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
GHOSTLINE_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// The scale of a block of activations from its largest magnitude, and a value's quantized form.
GHOSTLINE_HD float q8_scale(float amax) { return amax / 127.0f; }
GHOSTLINE_HD float q8_inverse(float scale) { return scale != 0.0f ? 1.0f / scale : 0.0f; }
GHOSTLINE_HD int8_t q8_value(float x, float inverse) {
  const float v = mul_rn(x, inverse);
  return static_cast<int8_t>(static_cast<int>(add_rn(v, v >= 0.0f ? 0.5f : -0.5f)));
}

// Sum of the products of the four signed bytes of a and b, plus c (the dp4a instruction).
GHOSTLINE_HD int dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);
#else
  for (int i = 0; i < 4; ++i)
    c += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i)) *
         static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i));
  return c;
#endif
}

// Little-endian 16-bit load from an address of 2-byte alignment (every scale the int8 kernel
// reads).
GHOSTLINE_HD uint16_t load_u16_aligned(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint16_t*>(p);
#else
  return load_u16(p);
#endif
}

// Little-endian 32-bit word at an address of 2-byte alignment (every word a part reads is).
GHOSTLINE_HD int load_word(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<int>(static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16));
#else
  return static_cast<int>(static_cast<uint32_t>(load_u16(p)) |
                          (static_cast<uint32_t>(load_u16(p + 2)) << 16));
#endif
}

// Bits 0..3 of `bits` as 16 in the matching byte of a word (the fifth bits of four values).
GHOSTLINE_HD int spread_fifth_bits(uint32_t bits) {
  return static_cast<int>(((bits & 1u) | ((bits & 2u) << 7) | ((bits & 4u) << 14) |
                           ((bits & 8u) << 21))
                          << 4);
}

// The four IQ4 grid values of a word's four low nibbles, as signed bytes of a word.
GHOSTLINE_HD int iq4_grid_word(uint32_t nibbles) {
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i)
    out |= static_cast<uint32_t>(static_cast<uint8_t>(iq4_grid((nibbles >> (8 * i)) & 0xF)))
           << (8 * i);
  return static_cast<int>(out);
}

// One part of a chunk's dot product: the activations' two words `xa` (values 4p..4p+3 of the
// chunk) and `xb` (16+4p..), whose block scale is `dx`.
struct Q8Part {
  int xa, xb;
  float dx;
};

// The sum of the part's eight quantized activations.
GHOSTLINE_HD int q8_part_sum(const Q8Part& x) {
  return dp4a(0x01010101, x.xa, dp4a(0x01010101, x.xb, 0));
}

// The weights of one part, read once for every token: the values as signed bytes of two words
// (`lo` against the activations' xa, `hi` against xb), their integer scales, and the value of
// each as d * sc * q + m (m is 0 for types without a min).
struct WeightPart {
  int lo, hi;
  int sc_lo, sc_hi;
  float d, m;
};

// Whether a type's values carry a min (x = d * q + m), which multiplies the activations' sum.
GHOSTLINE_HD constexpr bool q8_has_min(GgmlType type) {
  return type == GgmlType::Q4_1 || type == GgmlType::Q5_1 || type == GgmlType::Q4_K ||
         type == GgmlType::Q5_K;
}

// The part's dot product with one token's activations.
template <bool kMin>
GHOSTLINE_HD float q8_part_dot(const WeightPart& w, const Q8Part& x) {
  const int s = w.sc_lo * dp4a(w.lo, x.xa, 0) + w.sc_hi * dp4a(w.hi, x.xb, 0);
  float r = w.d * static_cast<float>(s);
  if constexpr (kMin) r += w.m * static_cast<float>(q8_part_sum(x));
  return x.dx * r;
}

// Each byte of `word` (all below 128) less k (at most 127): the signed bytes of the values once
// their offset is taken off.
GHOSTLINE_HD int sub_bytes(int word, uint32_t k) {
  return static_cast<int>(((static_cast<uint32_t>(word) | 0x80808080u) - k * 0x01010101u) ^
                          0x80808080u);
}

// Part p of chunk c of a row stored in each type.
GHOSTLINE_HD WeightPart q8_weights_q8_0(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + c * kQ8_0Bytes;
  return {load_word(b + 2 + 4 * p),
          load_word(b + 18 + 4 * p),
          1,
          1,
          half_to_float(load_u16_aligned(b)),
          0.0f};
}

GHOSTLINE_HD WeightPart q8_weights_q4_0(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + c * kQ4_0Bytes;
  const int q = load_word(b + 2 + 4 * p);
  return {sub_bytes(q & 0x0F0F0F0F, 8), sub_bytes((q >> 4) & 0x0F0F0F0F, 8), 1, 1,
          half_to_float(load_u16_aligned(b)), 0.0f};
}

GHOSTLINE_HD WeightPart q8_weights_q4_1(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + c * kQ4_1Bytes;
  const int q = load_word(b + 4 + 4 * p);
  return {q & 0x0F0F0F0F, (q >> 4) & 0x0F0F0F0F, 1, 1, half_to_float(load_u16_aligned(b)),
          half_to_float(load_u16_aligned(b + 2))};
}

// The part's two words of 5-bit values of a Q5_0 / Q5_1 block (qh: its 32 fifth bits).
GHOSTLINE_HD int fifth_bits_lo(int word, uint32_t qh, int p) {
  return (word & 0x0F0F0F0F) | spread_fifth_bits(qh >> (4 * p));
}
GHOSTLINE_HD int fifth_bits_hi(int word, uint32_t qh, int p) {
  return ((word >> 4) & 0x0F0F0F0F) | spread_fifth_bits(qh >> (16 + 4 * p));
}

GHOSTLINE_HD WeightPart q8_weights_q5_0(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + c * kQ5_0Bytes;
  const uint32_t qh = static_cast<uint32_t>(load_word(b + 2));
  const int q = load_word(b + 6 + 4 * p);
  return {sub_bytes(fifth_bits_lo(q, qh, p), 16), sub_bytes(fifth_bits_hi(q, qh, p), 16), 1, 1,
          half_to_float(load_u16_aligned(b)), 0.0f};
}

GHOSTLINE_HD WeightPart q8_weights_q5_1(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + c * kQ5_1Bytes;
  const uint32_t qh = static_cast<uint32_t>(load_word(b + 4));
  const int q = load_word(b + 8 + 4 * p);
  return {fifth_bits_lo(q, qh, p),
          fifth_bits_hi(q, qh, p),
          1,
          1,
          half_to_float(load_u16_aligned(b)),
          half_to_float(load_u16_aligned(b + 2))};
}

GHOSTLINE_HD WeightPart q8_weights_iq4_nl(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + c * kIq4NlBytes;
  const uint32_t q = static_cast<uint32_t>(load_word(b + 2 + 4 * p));
  return {iq4_grid_word(q & 0x0F0F0F0Fu), iq4_grid_word((q >> 4) & 0x0F0F0F0Fu), 1, 1,
          half_to_float(load_u16_aligned(b)), 0.0f};
}

GHOSTLINE_HD WeightPart q8_weights_iq4_xs(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + (c / 8) * kIq4XsBytes;
  const int s = c % 8, ls = iq4_xs_scale(b, s);
  const uint32_t q = static_cast<uint32_t>(load_word(b + 8 + 16 * s + 4 * p));
  return {iq4_grid_word(q & 0x0F0F0F0Fu), iq4_grid_word((q >> 4) & 0x0F0F0F0Fu), ls, ls,
          half_to_float(load_u16_aligned(b)), 0.0f};
}

// Q4_K and Q5_K: the part's values of sub-block c % 8, x = d * sc * q - dmin * m.
GHOSTLINE_HD WeightPart q8_weights_q4_k(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + (c / 8) * kQ4_KBytes;
  const int sub = c % 8, shift = 4 * (sub % 2);
  const uint8_t* qs = b + 16 + 32 * (sub / 2);
  int sc, m;
  k_scale_min(sub, b + 4, sc, m);
  return {(load_word(qs + 4 * p) >> shift) & 0x0F0F0F0F,
          (load_word(qs + 16 + 4 * p) >> shift) & 0x0F0F0F0F,
          sc,
          sc,
          half_to_float(load_u16_aligned(b)),
          -half_to_float(load_u16_aligned(b + 2)) * static_cast<float>(m)};
}

GHOSTLINE_HD WeightPart q8_weights_q5_k(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + (c / 8) * kQ5_KBytes;
  const int sub = c % 8, shift = 4 * (sub % 2);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48 + 32 * (sub / 2);
  int sc, m;
  k_scale_min(sub, b + 4, sc, m);
  return {((load_word(qs + 4 * p) >> shift) & 0x0F0F0F0F) |
              (((load_word(qh + 4 * p) >> sub) & 0x01010101) << 4),
          ((load_word(qs + 16 + 4 * p) >> shift) & 0x0F0F0F0F) |
              (((load_word(qh + 16 + 4 * p) >> sub) & 0x01010101) << 4),
          sc, sc, half_to_float(load_u16_aligned(b)),
          -half_to_float(load_u16_aligned(b + 2)) * static_cast<float>(m)};
}

// Q6_K: x = d * sc * (q - 32); the part's first word has the chunk's first scale of 16 values,
// its second word the second.
GHOSTLINE_HD WeightPart q8_weights_q6_k(const uint8_t* row, int c, int p) {
  const uint8_t* b = row + (c / 8) * kQ6_KBytes;
  const int half = (c % 8) / 4, quarter = c % 4;
  const uint8_t* ql = b + 64 * half + 32 * (quarter & 1);
  const uint8_t* qh = b + 128 + 32 * half;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192) + 8 * half + 2 * quarter;
  const int low_shift = quarter < 2 ? 0 : 4, high_shift = 2 * quarter;
  const int lo = ((load_word(ql + 4 * p) >> low_shift) & 0x0F0F0F0F) |
                 (((load_word(qh + 4 * p) >> high_shift) & 0x03030303) << 4);
  const int hi = ((load_word(ql + 16 + 4 * p) >> low_shift) & 0x0F0F0F0F) |
                 (((load_word(qh + 16 + 4 * p) >> high_shift) & 0x03030303) << 4);
  return {sub_bytes(lo, 32),
          sub_bytes(hi, 32),
          sc[0],
          sc[1],
          half_to_float(load_u16_aligned(b + 208)),
          0.0f};
}

// 1 / RMS(x) as RMSNorm scales a row: 1 / sqrt(mean(x^2) + eps), from the sum of squares.
GHOSTLINE_HD float rms_inv(float sum_squares, int n, float eps) {
  return 1.0f / sqrtf(sum_squares / static_cast<float>(n) + eps);
}

// out = x / RMS(x) * weight for one row (the kernel reduces the sum of squares over a block).
GHOSTLINE_HD void rmsnorm_row(float* out, const float* x, const float* weight, int n, float eps) {
  float ss = 0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const float inv = rms_inv(ss, n, eps);
  for (int i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

// The sum of squares of a row of n values (n a multiple of 4) as one warp forms it, so that the
// host can repeat it bit for bit: lane l takes the four values at 4l, 4l + 128, 4l + 256, ...
// (one 16-byte load each) and sums their squares in order by fused multiply-adds, then the
// lanes' sums are added by the butterfly of warp_sum (at each step lane l adds lane l ^ offset's
// value; the two lanes of a pair form the same sum).
GHOSTLINE_HD float add_squares4(float s, float a, float b, float c, float d) {
  s = fmaf(a, a, s);
  s = fmaf(b, b, s);
  s = fmaf(c, c, s);
  return fmaf(d, d, s);
}
GHOSTLINE_HD float warp_order_lane_squares(const float* x, int n, int lane) {
  float s = 0.0f;
  for (int i = 4 * lane; i < n; i += 128) s = add_squares4(s, x[i], x[i + 1], x[i + 2], x[i + 3]);
  return s;
}
inline float warp_order_sum_squares(const float* x, int n) {
  float p[32], q[32];
  for (int l = 0; l < 32; ++l) p[l] = warp_order_lane_squares(x, n, l);
  for (int offset = 16; offset > 0; offset /= 2) {
    for (int l = 0; l < 32; ++l) q[l] = p[l] + p[l ^ offset];
    for (int l = 0; l < 32; ++l) p[l] = q[l];
  }
  return p[0];
}

// Value i of a row normalized by the int8 kernel: x * (1 / RMS) * weight, rounded product by
// product.
GHOSTLINE_HD float rms_normalized(float x, float inverse_rms, float weight) {
  return mul_rn(mul_rn(x, inverse_rms), weight);
}

// The dimensions pair i (0..d/2) of a head rotates: adjacent (2i, 2i+1) for llama, halves
// (i, i + d/2) for NeoX-style models (qwen2).
GHOSTLINE_HD void rope_pair_index(int i, int d, bool neox, int& a, int& b) {
  a = neox ? i : 2 * i;
  b = neox ? i + d / 2 : 2 * i + 1;
}

// Angle of pair i at position pos: pos * freq_scale * theta_base^(-2i/d), in double because
// positions reach tens of thousands of radians.
GHOSTLINE_HD double rope_angle(int pos, int i, int d, float theta_base, float freq_scale) {
  return pos * static_cast<double>(freq_scale) * pow(static_cast<double>(theta_base), -2.0 * i / d);
}

// Rotates (x0, x1) by `angle`.
GHOSTLINE_HD void rope_rotate(float& x0, float& x1, double angle) {
  const double cs = cos(angle), sn = sin(angle);
  const double a = x0, b = x1;
  x0 = static_cast<float>(a * cs - b * sn);
  x1 = static_cast<float>(a * sn + b * cs);
}

// SwiGLU: silu(gate) * up.
GHOSTLINE_HD float swiglu(float gate, float up) {
  return gate / (1.0f + expf(-gate)) * up;
}

// Streaming softmax over attention scores (one query): the running max and the sum of
// exp(score - max). Each new key rescales what was accumulated before it, so the weighted sum
// of values is built in one pass over the keys; partial states of disjoint key ranges merge.
struct SoftmaxState {
  float max = -INFINITY;
  float sum = 0.0f;
};

// Adds one score; returns the factor the accumulated values must be multiplied by
// (`rescale`) and the weight of the new key's value (`weight`).
GHOSTLINE_HD void softmax_push(SoftmaxState& s, float score, float& rescale, float& weight) {
  const float m = fmaxf(s.max, score);
  rescale = expf(s.max - m);  // 0 for the first key (max was -inf)
  weight = expf(score - m);
  s.sum = s.sum * rescale + weight;
  s.max = m;
}

// Merges state `b` into `a`; returns the factors for a's and b's accumulated values.
GHOSTLINE_HD void softmax_merge(SoftmaxState& a, const SoftmaxState& b, float& scale_a,
                                float& scale_b) {
  const float m = fmaxf(a.max, b.max);
  scale_a = a.max == -INFINITY ? 0.0f : expf(a.max - m);
  scale_b = b.max == -INFINITY ? 0.0f : expf(b.max - m);
  a.sum = a.sum * scale_a + b.sum * scale_b;
  a.max = m;
}

// How the mat-vec kernel spreads a matrix over blocks of `warps` warps. A row is read in
// segments of 32 chunks (one per lane); a row of several segments is split over up to `warps`
// warps (a power of two that divides `warps`, no more than the segments), so that a long row's
// segments are read at once rather than one after the other: warp `part` of a row takes the
// segments s with s % warps_per_row == part. The row's sum adds the warps' sums in part order,
// which depends on the matrix only, never on the number of tokens.
struct MatvecSplit {
  int warps_per_row;
  int rows_per_block;
};

GHOSTLINE_HD MatvecSplit matvec_split(int segments, int warps) {
  int w = 1;
  while (w * 2 <= warps && warps % (w * 2) == 0 && w * 2 <= segments) w *= 2;
  return {w, warps / w};
}

// A launch of the mat-vec kernel serves up to three matrices (Q, K and V), their blocks dealt in
// order: part p has matvec_blocks(rows_p, rows_per_block) blocks from its first block on.
GHOSTLINE_HD int matvec_blocks(int rows, int rows_per_block) {
  return (rows + rows_per_block - 1) / rows_per_block;
}

// The part block b works on, given the number of parts and the first blocks of parts 1 and 2.
GHOSTLINE_HD int matvec_part(int b, int n_parts, int first1, int first2) {
  return n_parts > 2 && b >= first2 ? 2 : n_parts > 1 && b >= first1 ? 1 : 0;
}

// The row of its part that warp `warp` of block b reads (a row at or past the part's rows: the
// warp has none), and which of the row's warps it is (matvec_split).
GHOSTLINE_HD int matvec_row(int b, int part_first_block, int warp, const MatvecSplit& split) {
  return (b - part_first_block) * split.rows_per_block + warp / split.warps_per_row;
}
GHOSTLINE_HD int matvec_row_part(int warp, const MatvecSplit& split) {
  return warp % split.warps_per_row;
}

// Segments of a row of `cols` values: 32 chunks of kChunk values each. Rows whose length is not
// a multiple of 4 (float types only) have none: the kernel reads them value by value.
GHOSTLINE_HD int matvec_segments(int cols) {
  const int chunks = cols % 4 == 0 ? cols / kChunk : 0;
  return (chunks + 31) / 32;
}

// The greedy token of a row of logits, as engine::argmax picks it (for logits without NaN):
// the larger value wins, a tie goes to the lower index. States of disjoint ranges of the row
// merge (argmax_push of one's value and index into the other) in any order to the same winner,
// so the threads of a block may each scan a stride and reduce in any tree.
struct ArgmaxState {
  float value;
  int32_t index;
};

GHOSTLINE_HD ArgmaxState argmax_start() { return {-INFINITY, INT32_MAX}; }

GHOSTLINE_HD void argmax_push(ArgmaxState& s, float value, int32_t index) {
  if (value > s.value || (value == s.value && index < s.index)) {
    s.value = value;
    s.index = index;
  }
}

// The winner's index; 0 when nothing beat the start (a row of NaN), as engine::argmax gives.
GHOSTLINE_HD int32_t argmax_index(const ArgmaxState& s) {
  return s.index == INT32_MAX ? 0 : s.index;
}

}  // namespace ghostline::engine::cuda_math
