#include "engine/gguf/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ghostline::engine::gguf {

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal half: normalize the mantissa into a binary32 normal number.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t fp32_to_fp16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or NaN
    return sign | 0x7C00 | (abs > 0x7F800000u ? 0x200 : 0);
  }
  if (abs >= 0x477FF000u) return sign | 0x7C00;  // rounds to a value above 65504: inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): value / 2^-24 rounded to nearest even.
    if (abs < 0x33000000u) return sign;  // below half of the smallest subnormal
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7FFFFF) | 0x800000;
    const uint32_t shift = 126 - e;  // value = m * 2^(e-150); count units of 2^-24
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return sign | static_cast<uint16_t>(q);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t h = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t rem = abs & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // a carry into the exponent is correct
  return sign | static_cast<uint16_t>(h);
}

uint16_t fp32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

namespace {

template <typename Block>
const Block* blocks(const std::byte* src) {
  return reinterpret_cast<const Block*>(src);
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK8_0; ++j) y[i * kQK8_0 + j] = x[i].qs[j] * d;
  }
}

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      const int x0 = (x[i].qs[j] & 0x0F) - 8;
      const int x1 = (x[i].qs[j] >> 4) - 8;
      y[i * kQK8_0 + j] = x0 * d;
      y[i * kQK8_0 + j + kQK8_0 / 2] = x1 * d;
    }
  }
}

void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      y[i * kQK8_0 + j] = (x[i].qs[j] & 0x0F) * d + m;
      y[i * kQK8_0 + j + kQK8_0 / 2] = (x[i].qs[j] >> 4) * d + m;
    }
  }
}

// The fifth bit of value j of a Q5_0 / Q5_1 block, as 0 or 16.
inline int q5_high_bit(const uint8_t qh_bytes[4], int j) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof qh);
  return ((qh >> j) & 1) << 4;
}

void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      const int x0 = ((x[i].qs[j] & 0x0F) | q5_high_bit(x[i].qh, j)) - 16;
      const int x1 = ((x[i].qs[j] >> 4) | q5_high_bit(x[i].qh, j + 16)) - 16;
      y[i * kQK8_0 + j] = x0 * d;
      y[i * kQK8_0 + j + kQK8_0 / 2] = x1 * d;
    }
  }
}

void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      const int x0 = (x[i].qs[j] & 0x0F) | q5_high_bit(x[i].qh, j);
      const int x1 = (x[i].qs[j] >> 4) | q5_high_bit(x[i].qh, j + 16);
      y[i * kQK8_0 + j] = x0 * d + m;
      y[i * kQK8_0 + j + kQK8_0 / 2] = x1 * d + m;
    }
  }
}

void dequantize_iq4_nl(const BlockIq4Nl* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      y[i * kQK8_0 + j] = d * kIq4nlValues[x[i].qs[j] & 0xF];
      y[i * kQK8_0 + j + kQK8_0 / 2] = d * kIq4nlValues[x[i].qs[j] >> 4];
    }
  }
}

void dequantize_iq4_xs(const BlockIq4Xs* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int s = 0; s < kQK_K / 32; ++s) {
      const float dl = d * iq4_xs_scale(x[i], s);
      const uint8_t* qs = x[i].qs + 16 * s;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * kIq4nlValues[qs[j] & 0xF];
        y[j + 16] = dl * kIq4nlValues[qs[j] >> 4];
      }
      y += 32;
    }
  }
}

void dequantize_q2_k(const BlockQ2_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    for (int v = 0; v < kQK_K; ++v) {
      // Half h of 128 values, shift s: value 128h + 32s + l sits at bits 2s of qs[32h + l].
      const int h = v / 128, s = (v % 128) / 32, l = v % 32;
      const int q = (x[i].qs[32 * h + l] >> (2 * s)) & 3;
      const uint8_t sc = x[i].scales[v / 16];
      y[v] = d * (sc & 0xF) * q - dmin * (sc >> 4);
    }
    y += kQK_K;
  }
}

void dequantize_q3_k(const BlockQ3_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    int8_t sc[16];
    q3_k_scales(x[i].scales, sc);
    for (int v = 0; v < kQK_K; ++v) {
      const int h = v / 128, s = (v % 128) / 32, l = v % 32;
      const int low = (x[i].qs[32 * h + l] >> (2 * s)) & 3;
      const int high = (x[i].hmask[l] >> (v / 32)) & 1;  // set: q = low, clear: q = low - 4
      y[v] = d * sc[v / 16] * (low - (high ? 0 : 4));
    }
    y += kQK_K;
  }
}

void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    for (int j = 0; j < kQK_K / 64; ++j) {
      uint8_t sc, m;
      k_scale_min(2 * j, x[i].scales, sc, m);
      const float d1 = d * sc, m1 = dmin * m;
      k_scale_min(2 * j + 1, x[i].scales, sc, m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
      q += 32;
    }
  }
}

void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < kQK_K / 64; ++j) {
      uint8_t sc, m;
      k_scale_min(2 * j, x[i].scales, sc, m);
      const float d1 = d * sc, m1 = dmin * m;
      k_scale_min(2 * j + 1, x[i].scales, sc, m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
}

void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int n = 0; n < kQK_K; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

}  // namespace

bool can_dequantize(GgmlType type) {
  // The type table says which types the backends compute with; one list for the whole engine.
  auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  return traits && traits->supported;
}

void dequantize_row(GgmlType type, const std::byte* src, float* dst, int64_t n) {
  if (!can_dequantize(type))
    throw std::invalid_argument("dequantize_row: tensor type " + std::string(ggml_type_name(type)) +
                                " is not supported");
  const int64_t block = ggml_type_traits(type).block_elems;
  if (n % block != 0)
    throw std::invalid_argument("dequantize_row: " + std::to_string(n) + " values of type " +
                                std::string(ggml_type_name(type)) +
                                " are not a whole number of blocks of " + std::to_string(block));
  const int64_t nb = n / block;
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case GgmlType::F16: {
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = fp16_to_fp32(h);
      }
      break;
    }
    case GgmlType::BF16: {
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = bf16_to_fp32(h);
      }
      break;
    }
    case GgmlType::Q8_0:
      dequantize_q8_0(blocks<BlockQ8_0>(src), dst, nb);
      break;
    case GgmlType::Q4_0:
      dequantize_q4_0(blocks<BlockQ4_0>(src), dst, nb);
      break;
    case GgmlType::Q4_1:
      dequantize_q4_1(blocks<BlockQ4_1>(src), dst, nb);
      break;
    case GgmlType::Q5_0:
      dequantize_q5_0(blocks<BlockQ5_0>(src), dst, nb);
      break;
    case GgmlType::Q5_1:
      dequantize_q5_1(blocks<BlockQ5_1>(src), dst, nb);
      break;
    case GgmlType::IQ4_NL:
      dequantize_iq4_nl(blocks<BlockIq4Nl>(src), dst, nb);
      break;
    case GgmlType::IQ4_XS:
      dequantize_iq4_xs(blocks<BlockIq4Xs>(src), dst, nb);
      break;
    case GgmlType::Q2_K:
      dequantize_q2_k(blocks<BlockQ2_K>(src), dst, nb);
      break;
    case GgmlType::Q3_K:
      dequantize_q3_k(blocks<BlockQ3_K>(src), dst, nb);
      break;
    case GgmlType::Q4_K:
      dequantize_q4_k(blocks<BlockQ4_K>(src), dst, nb);
      break;
    case GgmlType::Q5_K:
      dequantize_q5_k(blocks<BlockQ5_K>(src), dst, nb);
      break;
    case GgmlType::Q6_K:
      dequantize_q6_k(blocks<BlockQ6_K>(src), dst, nb);
      break;
    default:
      break;  // unreachable: checked above
  }
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  const int64_t nb = n / kQK8_0;
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK8_0; ++j) y[i].qs[j] = static_cast<int8_t>(std::nearbyint(xb[j] * id));
  }
}

void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQK_K;
    float amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = d;
    for (int j = 0; j < kQK_K; ++j) y[i].qs[j] = static_cast<int8_t>(std::nearbyint(xb[j] * id));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[i].qs[g * 16 + j];
      y[i].bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace ghostline::engine::gguf
