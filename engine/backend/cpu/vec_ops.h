// Row-wise vector operations of the forward pass (normalization, activations, attention
// helpers), vectorized per instruction-set level and chosen at run time like the matmul
// kernels. The free functions use active_isa(); vec_ops(isa) gives one level explicitly.
#pragma once

#include <cmath>
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"

namespace ghostline::engine::cpu {

// GELU, tanh approximation (llama.cpp's ggml_gelu), written as x * sigmoid(2u) with
// u = sqrt(2/pi) (x + 0.044715 x^3), which equals 0.5 x (1 + tanh u) and needs only exp: the
// scalar tails of the SIMD kernels use it too.
inline float gelu_tanh(float x) {
  constexpr float kTwoSqrt2OverPi = 1.5957691216057308f;
  return x / (1.0f + std::exp(-kTwoSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

struct VecOps {
  // out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]; out may alias x.
  void (*rmsnorm)(const float* x, const float* weight, int64_t n, float eps, float* out);
  // x = exp(x - max x) / sum; n ≥ 1.
  void (*softmax)(float* x, int64_t n);
  // out[i] = gate[i] / (1 + exp(-gate[i])) * up[i] (SwiGLU); out may alias gate or up.
  void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out);
  // out[i] = a[i] + b[i]; out may alias a or b.
  void (*add)(const float* a, const float* b, int64_t n, float* out);
  // x[i] *= s.
  void (*scale)(float* x, int64_t n, float s);
  // Exact widening; narrowing rounds to nearest even.
  void (*fp16_to_fp32)(const uint16_t* src, int64_t n, float* dst);
  void (*fp32_to_fp16)(const float* src, int64_t n, uint16_t* dst);
  float (*dot)(const float* a, const float* b, int64_t n);
  // y[i] += a * x[i].
  void (*axpy)(float a, const float* x, int64_t n, float* y);
  // out[i] = (x[i] - mean) / sqrt(var + eps) * weight[i] + bias[i] (LayerNorm; a null bias is
  // zero); out may alias x.
  void (*layernorm)(const float* x, const float* weight, const float* bias, int64_t n, float eps,
                    float* out);
  // out[i] = gelu(x[i]), tanh approximation; out may alias x.
  void (*gelu)(const float* x, int64_t n, float* out);
  // out[i] = gelu(gate[i]) * up[i] (GeGLU); out may alias gate or up.
  void (*gelu_mul)(const float* gate, const float* up, int64_t n, float* out);
  // Up to kAttnKeys keys of causal attention for the n_q query heads of one token that share a
  // KV head, with a running softmax, the keys and values read in place as F16 (the KV pool's
  // blocks), one pointer per panel of kAttnRows keys: key r of panel b transposed,
  // kt[b][i * kAttnRows + r % kAttnRows], its values a row, v[b][(r % kAttnRows) * d + i], for
  // r < keys (1 ≤ keys ≤ kAttnKeys; a panel holding keys is whole and readable, what lies past
  // keys is ignored). For each query row g (q and out rows d apart), with scores
  // s_r = scale * sum_i q[g d + i] * k_r[i] summed over i in order:
  //   m' = max(m[g], max_r s_r), c = exp(m[g] - m'), p_r = exp(s_r - m'),
  //   l[g] = c * l[g] + sum_r p_r, out_g = c * out_g + p_0 v_0 + p_1 v_1 + ... (a fused
  //   multiply-add per row r, in turn), m[g] = m'.
  // Start a row with m = -inf, l = 0, out = 0, and divide out by l after its last block. What
  // a row gets does not depend on n_q or on the other rows.
  // While it computes, it asks for the runs of 2 * kAttnRows * d values ahead[0 ..
  // ahead_runs) (the next stretch's panels, each its keys then its values as the KV pool lays
  // them out) a line at a time among its multiply-adds: asked for all at once, as many lines
  // as a stretch holds wait in the core's queue of misses instead of overlapping the work.
  void (*attn_block)(const uint16_t* const* kt, const uint16_t* const* v, int64_t keys, int64_t d,
                     const float* q, int64_t n_q, float scale, float* m, float* l, float* out,
                     const uint16_t* const* ahead, int64_t ahead_runs);
};

// Keys of one transposed panel for attn_block (the KV pool's tokens per block), and the most
// keys one call takes: its fixed costs (the row's maximum and sum, the rescaling of its output)
// are paid once for all of them.
inline constexpr int64_t kAttnRows = 16;
inline constexpr int64_t kAttnKeys = 4 * kAttnRows;

// The operations of one level; it must be supported by this CPU (see isa_supported).
const VecOps& vec_ops(CpuIsa isa);
const VecOps& vec_ops();  // active_isa()

inline void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  vec_ops().rmsnorm(x, weight, n, eps, out);
}
inline void layernorm(const float* x, const float* weight, const float* bias, int64_t n, float eps,
                      float* out) {
  vec_ops().layernorm(x, weight, bias, n, eps, out);
}
inline void gelu(const float* x, int64_t n, float* out) {
  vec_ops().gelu(x, n, out);
}
inline void gelu_mul(const float* gate, const float* up, int64_t n, float* out) {
  vec_ops().gelu_mul(gate, up, n, out);
}
inline void softmax(float* x, int64_t n) {
  vec_ops().softmax(x, n);
}
inline void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  vec_ops().silu_mul(gate, up, n, out);
}
inline void add(const float* a, const float* b, int64_t n, float* out) {
  vec_ops().add(a, b, n, out);
}
inline void scale(float* x, int64_t n, float s) {
  vec_ops().scale(x, n, s);
}
inline void fp16_to_fp32_row(const uint16_t* src, int64_t n, float* dst) {
  vec_ops().fp16_to_fp32(src, n, dst);
}
inline void fp32_to_fp16_row(const float* src, int64_t n, uint16_t* dst) {
  vec_ops().fp32_to_fp16(src, n, dst);
}
inline float dot(const float* a, const float* b, int64_t n) {
  return vec_ops().dot(a, b, n);
}
inline void axpy(float a, const float* x, int64_t n, float* y) {
  vec_ops().axpy(a, x, n, y);
}

}  // namespace ghostline::engine::cpu
