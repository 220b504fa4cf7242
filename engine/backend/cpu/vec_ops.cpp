// Scalar vector operations (the fallback and the reference of the SIMD ones) and dispatch.
#include "engine/backend/cpu/vec_ops.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/gguf/quant.h"

namespace ghostline::engine::cpu {

#if GHOSTLINE_X86_KERNELS
namespace vec_kernels {
const VecOps& avx2_vec_ops();
const VecOps& avx512_vec_ops();
}  // namespace vec_kernels
#endif
#if GHOSTLINE_NEON_KERNELS
namespace vec_kernels {
const VecOps& neon_vec_ops();
}  // namespace vec_kernels
#endif

namespace {

void rmsnorm_scalar(const float* x, const float* weight, int64_t n, float eps, float* out) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void softmax_scalar(float* x, int64_t n) {
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::max(max, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void silu_mul_scalar(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add_scalar(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void scale_scalar(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void fp16_to_fp32_scalar(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = gguf::fp16_to_fp32(src[i]);
}

void fp32_to_fp16_scalar(const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = gguf::fp32_to_fp16(src[i]);
}

float dot_scalar(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void axpy_scalar(float a, const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void layernorm_scalar(const float* x, const float* weight, const float* bias, int64_t n, float eps,
                      float* out) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  double var = 0.0;
  for (int64_t i = 0; i < n; ++i) var += static_cast<double>(x[i] - mean) * (x[i] - mean);
  const float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i)
    out[i] = (x[i] - mean) * inv * weight[i] + (bias ? bias[i] : 0.0f);
}

void gelu_scalar(const float* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_tanh(x[i]);
}

void gelu_mul_scalar(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_tanh(gate[i]) * up[i];
}

void attn_block_scalar(const uint16_t* const* kt, const uint16_t* const* v, int64_t keys,
                       int64_t d, const float* q, int64_t n_q, float scale, float* m, float* l,
                       float* out, const uint16_t* const* /*ahead*/, int64_t /*ahead_runs*/) {
  auto key = [&](int64_t r, int64_t i) {
    return gguf::fp16_to_fp32(kt[r / kAttnRows][i * kAttnRows + r % kAttnRows]);
  };
  float p[kAttnKeys];
  for (int64_t g = 0; g < n_q; ++g) {
    float block_max = -INFINITY;
    for (int64_t r = 0; r < keys; ++r) {
      float sum = 0.0f;
      for (int64_t i = 0; i < d; ++i) sum += q[g * d + i] * key(r, i);
      p[r] = sum * scale;
      block_max = std::max(block_max, p[r]);
    }
    const float m_new = std::max(m[g], block_max);
    const float c = std::exp(m[g] - m_new);
    float sum = 0.0f;
    for (int64_t r = 0; r < keys; ++r) {
      p[r] = std::exp(p[r] - m_new);
      sum += p[r];
    }
    l[g] = c * l[g] + sum;
    m[g] = m_new;
    scale_scalar(out + g * d, d, c);
    for (int64_t r = 0; r < keys; ++r) {
      const uint16_t* value = v[r / kAttnRows] + (r % kAttnRows) * d;
      for (int64_t i = 0; i < d; ++i) out[g * d + i] += p[r] * gguf::fp16_to_fp32(value[i]);
    }
  }
}

}  // namespace

const VecOps& vec_ops(CpuIsa isa) {
  static const VecOps scalar{
      rmsnorm_scalar, softmax_scalar,      silu_mul_scalar,     add_scalar,
      scale_scalar,   fp16_to_fp32_scalar, fp32_to_fp16_scalar, dot_scalar,
      axpy_scalar,    layernorm_scalar,    gelu_scalar,         gelu_mul_scalar,
      attn_block_scalar};
  switch (isa) {
#if GHOSTLINE_X86_KERNELS
    case CpuIsa::kAvx512:
      return vec_kernels::avx512_vec_ops();
    case CpuIsa::kAvxVnni:  // no vector op needs more than AVX2
    case CpuIsa::kAvx2:
      return vec_kernels::avx2_vec_ops();
#endif
#if GHOSTLINE_NEON_KERNELS
    case CpuIsa::kNeonDot:  // no vector op uses the dot product instructions
    case CpuIsa::kNeon:
      return vec_kernels::neon_vec_ops();
#endif
    default:  // kScalar, and levels this target does not build (never supported here)
      break;
  }
  return scalar;
}

const VecOps& vec_ops() {
  static const VecOps& ops = vec_ops(active_isa());
  return ops;
}

}  // namespace ghostline::engine::cpu
