// Portable kernels: the fallback on CPUs without AVX2, and a readable statement of what the
// SIMD kernels compute.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/gguf/quant.h"

namespace ghostline::engine::cpu::kernels {
namespace {

// ---- decode: one weight row against one token's quantized activations ----

float dot_q8_0(const BlockQ8_0* w, const int8_t* xq, const float* xd, int64_t nb) {
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < kQK8_0; ++j) isum += w[b].qs[j] * xq[b * kQK8_0 + j];
    sum += fp16_to_fp32(w[b].d) * xd[b] * static_cast<float>(isum);
  }
  return sum;
}

float dot_q4_0(const BlockQ4_0* w, const int8_t* xq, const float* xd, const int32_t* sum16,
               int64_t nb) {
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* x = xq + b * kQK8_0;
    int32_t isum = 0;
    for (int j = 0; j < kQK8_0 / 2; ++j)
      isum += (w[b].qs[j] & 0xF) * x[j] + (w[b].qs[j] >> 4) * x[j + kQK8_0 / 2];
    isum -= 8 * (sum16[2 * b] + sum16[2 * b + 1]);  // the -8 offset of every stored value
    sum += fp16_to_fp32(w[b].d) * xd[b] * static_cast<float>(isum);
  }
  return sum;
}

// Bit 4 of value j of a Q5_0 / Q5_1 block.
int q5_high(const uint8_t qh[4], int j) {
  return ((qh[j / 8] >> (j % 8)) & 1) << 4;
}

// Q4_1, Q5_0 and Q5_1 (x = d * q - offset or d * q + m with 4- or 5-bit q) and IQ4_NL (x = d *
// grid[q]): integer dot of the stored values with x, then the scale and offset per block.
template <GgmlType kType, typename Block>
float dot_32(const Block* w, const int8_t* xq, const float* xd, const int32_t* sum16, int64_t nb) {
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* x = xq + b * kQK8_0;
    int32_t isum = 0;
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      int q0 = w[b].qs[j] & 0xF, q1 = w[b].qs[j] >> 4;
      if constexpr (has_fifth_bits(kType)) {
        q0 |= q5_high(w[b].qh, j);
        q1 |= q5_high(w[b].qh, j + kQK8_0 / 2);
      }
      if constexpr (kType == GgmlType::IQ4_NL) {
        q0 = kIq4nlValues[q0];
        q1 = kIq4nlValues[q1];
      }
      isum += q0 * x[j] + q1 * x[j + kQK8_0 / 2];
    }
    const int32_t xsum = sum16[2 * b] + sum16[2 * b + 1];
    const float d = fp16_to_fp32(w[b].d);
    if constexpr (kType == GgmlType::Q5_0) isum -= 16 * xsum;
    sum += d * xd[b] * static_cast<float>(isum);
    if constexpr (has_block_min(kType))
      sum += fp16_to_fp32(w[b].m) * xd[b] * static_cast<float>(xsum);
  }
  return sum;
}

float dot_iq4_xs(const BlockIq4Xs* w, const int8_t* xq, const float* xd, int64_t nb) {
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t isum = 0;
    for (int s = 0; s < kQK_K / 32; ++s) {
      const uint8_t* qs = w[b].qs + 16 * s;
      const int8_t* x = xq + b * kQK_K + 32 * s;
      int32_t sub = 0;
      for (int j = 0; j < 16; ++j)
        sub += kIq4nlValues[qs[j] & 0xF] * x[j] + kIq4nlValues[qs[j] >> 4] * x[j + 16];
      isum += iq4_xs_scale(w[b], s) * sub;
    }
    sum += fp16_to_fp32(w[b].d) * xd[b] * static_cast<float>(isum);
  }
  return sum;
}

// Q2_K: x = d * (sc & 15) * q - dmin * (sc >> 4) per group of 16.
float dot_q2_k(const BlockQ2_K* w, const int8_t* xq, const float* xd, const int32_t* sum16,
               int64_t nb) {
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* x = xq + b * kQK_K;
    const int32_t* s16 = sum16 + b * (kQK_K / 16);
    int32_t scaled = 0, mins = 0;
    for (int v = 0; v < kQK_K; ++v) {
      const int h = v / 128, s = (v % 128) / 32, l = v % 32;
      scaled += (w[b].scales[v / 16] & 0xF) * ((w[b].qs[32 * h + l] >> (2 * s)) & 3) * x[v];
    }
    for (int g = 0; g < 16; ++g) mins += (w[b].scales[g] >> 4) * s16[g];
    sum += xd[b] * (fp16_to_fp32(w[b].d) * static_cast<float>(scaled) -
                    fp16_to_fp32(w[b].dmin) * static_cast<float>(mins));
  }
  return sum;
}

// Q3_K: x = d * s[g] * (q - 4) per group of 16, q = low 2 bits | third bit << 2.
float dot_q3_k(const BlockQ3_K* w, const int8_t* xq, const float* xd, const int32_t* sum16,
               int64_t nb) {
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* x = xq + b * kQK_K;
    const int32_t* s16 = sum16 + b * (kQK_K / 16);
    int8_t sc[16];
    q3_k_scales(w[b].scales, sc);
    int32_t isum = 0;
    for (int v = 0; v < kQK_K; ++v) {
      const int h = v / 128, s = (v % 128) / 32, l = v % 32;
      const int q =
          ((w[b].qs[32 * h + l] >> (2 * s)) & 3) | (((w[b].hmask[l] >> (v / 32)) & 1) << 2);
      isum += sc[v / 16] * q * x[v];
    }
    for (int g = 0; g < 16; ++g) isum -= 4 * sc[g] * s16[g];
    sum += xd[b] * fp16_to_fp32(w[b].d) * static_cast<float>(isum);
  }
  return sum;
}

// Q4_K and Q5_K: x = d * sc[j] * q - dmin * m[j] per sub-block j of 32 values.
template <bool kFiveBit, typename Block>
float dot_q45_k(const Block* w, const int8_t* xq, const float* xd, const int32_t* sum16,
                int64_t nb) {
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* x = xq + b * kQK_K;
    const int32_t* s16 = sum16 + b * (kQK_K / 16);
    int32_t scaled = 0, mins = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      k_scale_min(j, w[b].scales, sc, m);
      const uint8_t* qs = w[b].qs + 32 * (j / 2);
      int32_t isum = 0;
      for (int l = 0; l < 32; ++l) {
        int q = (j % 2 == 0) ? (qs[l] & 0xF) : (qs[l] >> 4);
        if constexpr (kFiveBit) q += ((w[b].qh[l] >> j) & 1) << 4;
        isum += q * x[32 * j + l];
      }
      scaled += sc * isum;
      mins += m * (s16[2 * j] + s16[2 * j + 1]);
    }
    sum += xd[b] * (fp16_to_fp32(w[b].d) * static_cast<float>(scaled) -
                    fp16_to_fp32(w[b].dmin) * static_cast<float>(mins));
  }
  return sum;
}

float dot_q6_k(const BlockQ6_K* w, const int8_t* xq, const float* xd, const int32_t* sum16,
               int64_t nb) {
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* x = xq + b * kQK_K;
    const int32_t* s16 = sum16 + b * (kQK_K / 16);
    int32_t isum = 0;
    for (int v = 0; v < kQK_K; ++v) {
      // Value v: half h of 128, quarter c of 32 within it, position l.
      const int h = v / 128, c = (v % 128) / 32, l = v % 32;
      const uint8_t lo = w[b].ql[64 * h + l + 32 * (c % 2)];
      const int low4 = c < 2 ? (lo & 0xF) : (lo >> 4);
      const int high2 = (w[b].qh[32 * h + l] >> (2 * c)) & 3;
      isum += w[b].scales[v / 16] * (low4 | (high2 << 4)) * x[v];
    }
    int32_t offset = 0;  // stored values carry +32
    for (int g = 0; g < 16; ++g) offset += w[b].scales[g] * s16[g];
    sum += xd[b] * fp16_to_fp32(w[b].d) * static_cast<float>(isum - 32 * offset);
  }
  return sum;
}

void decode_rows(const DecodeJob& job, int64_t r0, int64_t r1) {
  const WeightMatrix& w = *job.w;
  const int64_t cols = w.cols;
  thread_local std::vector<float> row;  // float weights only
  for (int64_t r = r0; r < r1; ++r) {
    const std::byte* wr = w.data + r * w.row_bytes;
    const int block = job.xq.block;
    const int64_t nb = block ? cols / block : 0;
    if (block == 0) {
      row.resize(cols);
      dequantize_row(w.type, wr, row.data(), cols);
    }
    for (int64_t t = 0; t < job.n_tokens; ++t) {
      const int8_t* xq = job.xq.q + t * cols;
      const float* xd = job.xq.d + (block ? t * nb : 0);
      const int32_t* s16 = job.xq.sum16 + t * (cols / 16);
      float v = 0.0f;
      switch (w.type) {
        case GgmlType::Q8_0:
          v = dot_q8_0(reinterpret_cast<const BlockQ8_0*>(wr), xq, xd, nb);
          break;
        case GgmlType::Q4_0:
          v = dot_q4_0(reinterpret_cast<const BlockQ4_0*>(wr), xq, xd, s16, nb);
          break;
        case GgmlType::Q4_1:
          v = dot_32<GgmlType::Q4_1>(reinterpret_cast<const BlockQ4_1*>(wr), xq, xd, s16, nb);
          break;
        case GgmlType::Q5_0:
          v = dot_32<GgmlType::Q5_0>(reinterpret_cast<const BlockQ5_0*>(wr), xq, xd, s16, nb);
          break;
        case GgmlType::Q5_1:
          v = dot_32<GgmlType::Q5_1>(reinterpret_cast<const BlockQ5_1*>(wr), xq, xd, s16, nb);
          break;
        case GgmlType::IQ4_NL:
          v = dot_32<GgmlType::IQ4_NL>(reinterpret_cast<const BlockIq4Nl*>(wr), xq, xd, s16, nb);
          break;
        case GgmlType::IQ4_XS:
          v = dot_iq4_xs(reinterpret_cast<const BlockIq4Xs*>(wr), xq, xd, nb);
          break;
        case GgmlType::Q2_K:
          v = dot_q2_k(reinterpret_cast<const BlockQ2_K*>(wr), xq, xd, s16, nb);
          break;
        case GgmlType::Q3_K:
          v = dot_q3_k(reinterpret_cast<const BlockQ3_K*>(wr), xq, xd, s16, nb);
          break;
        case GgmlType::Q4_K:
          v = dot_q45_k<false>(reinterpret_cast<const BlockQ4_K*>(wr), xq, xd, s16, nb);
          break;
        case GgmlType::Q5_K:
          v = dot_q45_k<true>(reinterpret_cast<const BlockQ5_K*>(wr), xq, xd, s16, nb);
          break;
        case GgmlType::Q6_K:
          v = dot_q6_k(reinterpret_cast<const BlockQ6_K*>(wr), xq, xd, s16, nb);
          break;
        default: {
          const float* x = job.x + t * cols;
          for (int64_t k = 0; k < cols; ++k) v += row[k] * x[k];
        }
      }
      job.y[t * w.rows + r] = v;
    }
  }
}

// ---- prefill: panels of kRows rows, transposed so a column of the panel is contiguous ----

constexpr int kRows = 16;
constexpr int kTokens = 4;
constexpr int64_t kScratch = kRows * kPrefillKc + kPrefillKc;

void prefill_panels(const PrefillJob& job, int64_t p0, int64_t p1, float* scratch) {
  const WeightMatrix& w = *job.w;
  float* panel = scratch;                     // [kc][kRows]
  float* row = scratch + kRows * kPrefillKc;  // one dequantized chunk
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t r0 = p * kRows;
    const int rows = static_cast<int>(std::min<int64_t>(kRows, w.rows - r0));
    for (int64_t k0 = 0; k0 < w.cols; k0 += kPrefillKc) {
      const int64_t kc = std::min(kPrefillKc, w.cols - k0);
      std::fill(panel, panel + kc * kRows, 0.0f);
      for (int i = 0; i < rows; ++i) {
        dequantize_range(w.type, w.data + (r0 + i) * w.row_bytes, k0, kc, row);
        for (int64_t k = 0; k < kc; ++k) panel[k * kRows + i] = row[k];
      }
      for (int64_t t0 = 0; t0 < job.n_tokens; t0 += kTokens) {
        const int nt = static_cast<int>(std::min<int64_t>(kTokens, job.n_tokens - t0));
        float acc[kTokens][kRows] = {};
        for (int64_t k = 0; k < kc; ++k) {
          const float* pk = panel + k * kRows;
          for (int j = 0; j < nt; ++j) {
            const float xv = job.x_packed[t0 * w.cols + (k0 + k) * kTokens + j];
            for (int i = 0; i < kRows; ++i) acc[j][i] += pk[i] * xv;
          }
        }
        for (int j = 0; j < nt; ++j) {
          float* yt = job.y + (t0 + j) * w.rows + r0;
          for (int i = 0; i < rows; ++i) yt[i] = (k0 == 0 ? 0.0f : yt[i]) + acc[j][i];
        }
      }
    }
  }
}

}  // namespace

const KernelSet& scalar_kernels() {
  static const KernelSet set{kRows, kTokens, kScratch, decode_rows, prefill_panels};
  return set;
}

}  // namespace ghostline::engine::cpu::kernels
