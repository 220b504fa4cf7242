// Block layouts of the GGUF/ggml quantized tensor types and their reference (scalar)
// dequantization. The structs mirror the on-disk bytes exactly; the functions read like the
// format definitions and are the oracle the SIMD kernels are tested against.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/gguf/ggml_type.h"

namespace ghostline::engine::gguf {

inline constexpr int kQK8_0 = 32;        // values per Q8_0 / Q4_0 block
inline constexpr int kQK_K = 256;        // values per K-quant super-block
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K / Q5_K

// Q8_0: x = d * q.
struct BlockQ8_0 {
  uint16_t d;  // fp16 scale
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q4_0: x = d * (q - 8); byte j holds value j in its low nibble and value j + 16 in its high one.
struct BlockQ4_0 {
  uint16_t d;  // fp16 scale
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1: x = d * q + m; nibbles as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: x = d * (q - 16) with 5-bit q: the low 4 bits as in Q4_0, bit 4 of value j in bit j of
// the little-endian 32-bit qh.
struct BlockQ5_0 {
  uint16_t d;  // fp16 scale
  uint8_t qh[4];
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: x = d * q + m with 5-bit q laid out as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;  // fp16 scale
  uint16_t m;  // fp16 minimum
  uint8_t qh[4];
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// IQ4_NL: x = d * kIq4nlValues[q], nibbles as in Q4_0: a non-linear 4-bit grid.
struct BlockIq4Nl {
  uint16_t d;  // fp16 scale
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(BlockIq4Nl) == 18);

// IQ4_XS: 8 sub-blocks of 32 values, x = d * (ls[j] - 32) * kIq4nlValues[q], with 6-bit ls:
// low 4 bits in scales_l (nibble j % 2 of byte j / 2), high 2 bits at bits 2j of scales_h.
// Each 16 bytes of qs hold one sub-block, nibbles as in Q4_0.
struct BlockIq4Xs {
  uint16_t d;  // fp16
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIq4Xs) == 136);

// Sub-block s's signed scale ls - 32 (-32..31).
inline int iq4_xs_scale(const BlockIq4Xs& b, int s) {
  return (((b.scales_l[s / 2] >> (4 * (s % 2))) & 0xF) | (((b.scales_h >> (2 * s)) & 3) << 4)) - 32;
}

// The 16 values of the IQ4_NL / IQ4_XS grid.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Q2_K: 16 sub-blocks of 16 values, x = d * (sc & 15) * q - dmin * (sc >> 4) with 2-bit q.
// Each 32-byte half of qs holds 128 values: value 32 * s + l at bits 2s of byte l.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;     // fp16
  uint16_t dmin;  // fp16
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K: 16 sub-blocks of 16 values, x = d * (s[j] - 32) * (q - 4) with 3-bit q: low 2 bits in qs
// as in Q2_K, the third bit of value v in bit v / 32 of hmask[v % 32]; 6-bit scales s packed in
// 12 bytes (low 4 bits in bytes 0-7, high 2 bits in bytes 8-11).
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;  // fp16
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q4_K: 8 sub-blocks of 32 values, x = d * sc[j] * q - dmin * m[j], with 6-bit sc/m packed in
// `scales`. Each 32-byte group of qs holds two sub-blocks: low nibbles first, then high ones.
struct BlockQ4_K {
  uint16_t d;     // fp16 super-block scale of the sub-block scales
  uint16_t dmin;  // fp16 super-block scale of the sub-block mins
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: as Q4_K with a fifth bit per value in qh (bit 2i / 2i+1 for sub-blocks 2i / 2i+1).
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 sub-blocks of 16 values, x = d * scales[i] * (q - 32) with 6-bit q: low 4 bits in
// ql, high 2 bits in qh.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;  // fp16
};
static_assert(sizeof(BlockQ6_K) == 210);

// Q8_K: the activation format of K-quant dot products; bsums are sums of 16 consecutive q.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// IEEE binary16 <-> binary32, exact in the widening direction, round-to-nearest-even otherwise.
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);

// bfloat16 is the upper half of a binary32.
inline float bf16_to_fp32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}
uint16_t fp32_to_bf16(float f);  // round to nearest even; NaN stays NaN

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K super-block.
inline void k_scale_min(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Unpacks the 16 6-bit scales of a Q3_K super-block, each minus its offset of 32.
inline void q3_k_scales(const uint8_t* packed, int8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

// Whether dequantize_row handles `type`.
bool can_dequantize(GgmlType type);

// Expands `n` values of a row stored as `type` at `src` into float32. `n` must be a multiple of
// the type's block size; throws std::invalid_argument otherwise or for an unsupported type.
void dequantize_row(GgmlType type, const std::byte* src, float* dst, int64_t n);

// Quantizes `n` floats (a multiple of 32) to Q8_0 blocks, as the activations of Q8_0 and Q4_0
// dot products: d = max|x| / 127, q = round(x / d).
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);

// Quantizes `n` floats (a multiple of 256) to Q8_K blocks (d = max|x| / 127, bsums filled).
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace ghostline::engine::gguf
