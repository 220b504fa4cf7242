// Each kernel alone on fresh random inputs against the host's arithmetic (cuda_kernel_check in
// backend.h): each mat-vec kernel (blocks, rows, int8) for every type it reads at 1 to 8 tokens
// and odd shapes (rows that fill no whole block of rows, rows of one to five segments, float
// rows that are not a multiple of 4), with and without bias and accumulation, the Q/K/V launch
// (with the int8 kernel also with the attention norm folded in, as decode runs it), the gate/up
// SwiGLU launch and the greedy-token search. Outputs are poisoned (NaN) before each run, so a row
// a kernel never writes is seen. The host reference dequantizes with the engine's code
// (gguf::dequantize_row) and sums in double, for the int8 kernel with the activations quantized
// as it quantizes them; a batch must also give each token the bits it gets alone (speculative
// verification relies on it). Also the GEMM's tiles, dequantized as F32 and as fp16, activations
// rounded to fp16, and the fp16 GEMM (cuBLAS on tensor cores) as the backend runs it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_kernels.cuh"
#include "engine/backend/cuda/cuda_math.h"
#include "engine/gguf/ggml_type.h"
#include "engine/gguf/quant.h"

namespace ghostline::engine {
namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA kernel check: ") + what + ": " +
                             cudaGetErrorString(e));
}

// Device memory for one case, freed at the end of it.
class Device {
 public:
  ~Device() {
    for (void* p : blocks_) cudaFree(p);
  }
  template <typename T>
  T* copy(const T* host, size_t n) {
    T* p = alloc<T>(n);
    ok(cudaMemcpy(p, host, n * sizeof(T), cudaMemcpyHostToDevice), "upload");
    return p;
  }
  template <typename T>
  T* copy(const std::vector<T>& host) {
    return copy(host.data(), host.size());
  }
  template <typename T>
  T* alloc(size_t n) {
    void* p = nullptr;
    ok(cudaMalloc(&p, std::max<size_t>(1, n * sizeof(T))), "cudaMalloc");
    blocks_.push_back(p);
    return static_cast<T*>(p);
  }

 private:
  std::vector<void*> blocks_;
};

template <typename T>
std::vector<T> download(const T* p, size_t n) {
  std::vector<T> host(n);
  ok(cudaMemcpy(host.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
  return host;
}

uint16_t half_bits(float v) {
  return cuda_math::float_to_half(v);
}

// Random rows of `type`: random bytes, with every scale a finite fp16 of moderate size (and
// float types' values drawn as floats), so that the values are finite and of mixed signs.
std::vector<std::byte> random_rows(GgmlType type, int rows, int cols, std::mt19937& rng) {
  const size_t row_bytes = ggml_row_bytes(type, cols);
  std::vector<std::byte> data(row_bytes * size_t(rows));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f), scale(0.001f, 0.05f);
  for (auto& b : data) b = std::byte(rng() & 0xFF);
  auto put_half = [&](size_t at, float v) {
    const uint16_t h = half_bits(v);
    std::memcpy(&data[at], &h, 2);
  };
  if (type == GgmlType::F32) {
    for (size_t i = 0; i < data.size() / 4; ++i) {
      const float v = value(rng);
      std::memcpy(&data[4 * i], &v, 4);
    }
    return data;
  }
  if (type == GgmlType::F16 || type == GgmlType::BF16) {
    for (size_t i = 0; i < data.size() / 2; ++i) {
      const float v = value(rng);
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      const uint16_t h = type == GgmlType::F16 ? half_bits(v) : uint16_t(bits >> 16);
      std::memcpy(&data[2 * i], &h, 2);
    }
    return data;
  }
  // Every block's fp16 scale d (last in a Q6_K block, first in the others) and, where the type
  // has one, its min or dmin right after it.
  const size_t block = ggml_type_traits(type).block_bytes;
  const size_t first = type == GgmlType::Q6_K ? offsetof(gguf::BlockQ6_K, d) : 0;
  const bool second = type == GgmlType::Q4_1 || type == GgmlType::Q5_1 ||
                      type == GgmlType::Q4_K || type == GgmlType::Q5_K;
  for (size_t at = 0; at + block <= data.size(); at += block) {
    put_half(at + first, scale(rng));
    if (second) put_half(at + 2, scale(rng));
  }
  return data;
}

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = d(rng);
  return v;
}

// The host's y[t][r] = sum_c W[r][c] x[t][c] in double, and the sum of |W x| terms for the
// tolerance of a float sum.
struct HostProduct {
  std::vector<double> y, magnitude;
};
HostProduct host_product(GgmlType type, const std::vector<std::byte>& w, int rows, int cols,
                         const std::vector<float>& x, int n_tokens) {
  HostProduct p{std::vector<double>(size_t(rows) * n_tokens),
                std::vector<double>(size_t(rows) * n_tokens)};
  const size_t row_bytes = ggml_row_bytes(type, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int r = 0; r < rows; ++r) {
    gguf::dequantize_row(type, w.data() + size_t(r) * row_bytes, row.data(), cols);
    for (int t = 0; t < n_tokens; ++t) {
      double s = 0, m = 0;
      for (int c = 0; c < cols; ++c) {
        const double term = double(row[size_t(c)]) * x[size_t(t) * cols + c];
        s += term;
        m += std::abs(term);
      }
      p.y[size_t(t) * rows + r] = s;
      p.magnitude[size_t(t) * rows + r] = m;
    }
  }
  return p;
}

class Checker {
 public:
  KernelCheck result;
  std::string label;  // put before each finding: which mat-vec kernel decode used
  bool int8 = false;  // the int8 kernel: quantized types read quantized activations

  // The activations as the kernel multiplies them: with the int8 kernel and a type it reads,
  // each token's values quantized per block as the host's cuda_math functions do it (the CPU
  // backend's rounding; tests/engine/cuda_math_test.cpp), then multiplied back by their scale.
  std::vector<float> as_read(GgmlType type, const std::vector<float>& x) const {
    const int block = cuda_math::q8_activation_block(type);
    if (!int8 || block == 0) return x;
    std::vector<float> out(x.size());
    for (size_t b = 0; b < x.size() / size_t(block); ++b) {
      const float* xb = x.data() + b * size_t(block);
      float amax = 0.0f;
      for (int j = 0; j < block; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
      const float scale = cuda_math::q8_scale(amax), inverse = cuda_math::q8_inverse(scale);
      for (int j = 0; j < block; ++j)
        out[b * size_t(block) + size_t(j)] = float(cuda_math::q8_value(xb[j], inverse)) * scale;
    }
    return out;
  }

  // One finding per case at most (the first wrong element, and how many were wrong). Values
  // may be off by `relative` times their magnitude: 1e-5 for float sums of float products.
  void compare(const std::string& what, const std::vector<float>& got,
               const std::vector<double>& want, const std::vector<double>& magnitude, int rows,
               double relative = 1e-5) {
    ++result.cases;
    int wrong = 0;
    std::string first;
    for (size_t i = 0; i < want.size(); ++i) {
      const double tol = relative * magnitude[i] + 1e-6;
      const bool good = std::isfinite(got[i]) && std::abs(got[i] - want[i]) <= tol;
      if (good) continue;
      if (wrong++ == 0) {
        std::ostringstream s;
        s << "token " << i / size_t(rows) << " row " << i % size_t(rows) << ": " << got[i]
          << ", host " << want[i] << " (tolerance " << tol << ")";
        first = s.str();
      }
    }
    if (wrong > 0)
      result.failures.push_back(label + what + ": " + std::to_string(wrong) + " of " +
                                std::to_string(want.size()) + " values wrong; first " + first);
  }

  void same_bits(const std::string& what, const std::vector<float>& batch,
                 const std::vector<float>& alone, size_t offset) {
    ++result.cases;
    if (std::memcmp(batch.data() + offset, alone.data(), alone.size() * sizeof(float)) != 0)
      result.failures.push_back(label + what +
                                ": a token's values in the batch differ from its values alone "
                                "(bits)");
  }
};

cuda::DeviceMatrix upload_matrix(Device& dev, GgmlType type, const std::vector<std::byte>& w,
                                 int rows, int cols) {
  return {.data = dev.copy(reinterpret_cast<const uint8_t*>(w.data()), w.size()),
          .type = static_cast<uint32_t>(type),
          .rows = rows,
          .cols = cols,
          .row_bytes = ggml_row_bytes(type, cols)};
}

std::string type_name(GgmlType type) {
  return std::string(ggml_type_name(type));
}

std::string name_of(const char* kernel, GgmlType type, int rows, int cols, int n_tokens) {
  return std::string(kernel) + " " + type_name(type) + " " + std::to_string(rows) + "x" +
         std::to_string(cols) + ", " + std::to_string(n_tokens) + " token" +
         (n_tokens > 1 ? "s" : "");
}

// matvec at every token count; with `bias` and `accumulate` as given.
void check_matvec(Checker& ck, GgmlType type, int rows, int cols, bool with_bias, bool accumulate,
                  std::mt19937& rng) {
  Device dev;
  const auto w = random_rows(type, rows, cols, rng);
  const cuda::DeviceMatrix m = upload_matrix(dev, type, w, rows, cols);
  const int max_tokens = cuda::kMaxMatvecTokens;
  const auto x = random_floats(size_t(max_tokens) * cols, rng);
  const auto bias = random_floats(size_t(rows), rng);
  const auto start = random_floats(size_t(max_tokens) * rows, rng);  // y before accumulating
  const float* d_x = dev.copy(x);
  const float* d_bias = with_bias ? dev.copy(bias) : nullptr;
  float* d_y = dev.alloc<float>(size_t(max_tokens) * rows);
  std::vector<float> alone;
  for (const int n : {1, 2, 3, 5, max_tokens}) {
    const size_t n_out = size_t(n) * rows;
    if (accumulate)
      ok(cudaMemcpy(d_y, start.data(), n_out * 4, cudaMemcpyHostToDevice), "upload y");
    else
      ok(cudaMemset(d_y, 0xFF, n_out * 4), "poison y");  // NaN
    cuda::matvec(m, d_x, n, d_y, accumulate, d_bias, nullptr);
    ok(cudaDeviceSynchronize(), "matvec");
    const auto got = download(d_y, n_out);
    HostProduct want = host_product(type, w, rows, cols, ck.as_read(type, x), n);
    for (size_t i = 0; i < n_out; ++i) {
      if (accumulate) want.y[i] += start[i];
      if (with_bias) want.y[i] += bias[i % size_t(rows)];
    }
    std::string what = name_of("matvec", type, rows, cols, n);
    if (with_bias) what += ", bias";
    if (accumulate) what += ", accumulating";
    ck.compare(what, got, want.y, want.magnitude, rows);
    if (n == 1)
      alone = got;
    else
      ck.same_bits(what, got, alone, 0);
  }
}

// Q, K and V in one launch: each as matvec gives it, bit for bit, for one token and for three.
void check_shared_input(Checker& ck, GgmlType type, GgmlType v_type, int cols,
                        std::mt19937& rng) {
  for (const int n : {1, 3}) {
    Device dev;
    const int rows[3] = {37, 16, 16};
    const GgmlType types[3] = {type, type, v_type};
    cuda::DeviceMatrix ms[3];
    float* ys[3];
    float* alone[3];
    const auto x = random_floats(size_t(n) * cols, rng);
    const float* d_x = dev.copy(x);
    cuda::MatvecTarget targets[3];
    for (int i = 0; i < 3; ++i) {
      const auto w = random_rows(types[i], rows[i], cols, rng);
      ms[i] = upload_matrix(dev, types[i], w, rows[i], cols);
      ys[i] = dev.alloc<float>(size_t(n) * rows[i]);
      alone[i] = dev.alloc<float>(size_t(n) * rows[i]);
      ok(cudaMemset(ys[i], 0xFF, size_t(n) * rows[i] * 4), "poison y");
      const float* bias = i == 1 ? nullptr : dev.copy(random_floats(size_t(rows[i]), rng));
      targets[i] = {.w = &ms[i], .y = ys[i], .bias = bias};
      cuda::matvec(ms[i], d_x, n, alone[i], false, bias, nullptr);
    }
    const std::string what = "matvec_shared_input " + type_name(type) + ", " + type_name(type) +
                             ", " + type_name(v_type) + " x" + std::to_string(cols) + ", " +
                             std::to_string(n) + " token" + (n > 1 ? "s" : "");
    ++ck.result.cases;
    if (!cuda::matvec_shared_input(targets, 3, d_x, n, nullptr)) {
      ck.result.failures.push_back(ck.label + what + ": refused matrices of the same columns");
      return;
    }
    ok(cudaDeviceSynchronize(), "matvec_shared_input");
    for (int i = 0; i < 3; ++i)
      ck.same_bits(what + ", matrix " + std::to_string(i), download(ys[i], size_t(n) * rows[i]),
                   download(alone[i], size_t(n) * rows[i]), 0);
  }
}

// The host's swiglu of the gate and up products, with the tolerance's magnitude of each value.
HostProduct host_swiglu(GgmlType type, const std::vector<std::byte>& wg,
                        const std::vector<std::byte>& wu, int rows, int cols,
                        const std::vector<float>& x, int n_tokens) {
  const HostProduct pg = host_product(type, wg, rows, cols, x, n_tokens);
  const HostProduct pu = host_product(type, wu, rows, cols, x, n_tokens);
  HostProduct out{std::vector<double>(pg.y.size()), std::vector<double>(pg.y.size())};
  for (size_t i = 0; i < pg.y.size(); ++i) {
    out.y[i] = cuda_math::swiglu(float(pg.y[i]), float(pu.y[i]));
    // silu(g) * u moves by about |u| per unit of g and |silu(g)| per unit of u.
    out.magnitude[i] = pg.magnitude[i] * (std::abs(pu.y[i]) + 1) +
                       pu.magnitude[i] * (std::abs(pg.y[i]) + 1);
  }
  return out;
}

// Gate and up with SwiGLU in one launch against the host's swiglu of the two products, for one
// token and for three (whose first has the single token's bits).
void check_swiglu(Checker& ck, GgmlType type, int rows, int cols, std::mt19937& rng) {
  Device dev;
  const auto wg = random_rows(type, rows, cols, rng), wu = random_rows(type, rows, cols, rng);
  const cuda::DeviceMatrix g = upload_matrix(dev, type, wg, rows, cols);
  const cuda::DeviceMatrix u = upload_matrix(dev, type, wu, rows, cols);
  const int max_tokens = 3;
  const auto x = random_floats(size_t(max_tokens) * cols, rng);
  const float* d_x = dev.copy(x);
  float* d_y = dev.alloc<float>(size_t(max_tokens) * rows);
  std::vector<float> alone;
  // A type the int8 kernel reads must go through it when it is selected.
  if (ck.int8 && cuda_math::q8_activation_block(type) > 0 && !cuda::int8_reads(g)) {
    ++ck.result.cases;
    ck.result.failures.push_back(ck.label + name_of("matvec_swiglu", type, rows, cols, 1) +
                                 ": not read by the int8 kernel");
    return;
  }
  for (const int n : {1, max_tokens}) {
    ok(cudaMemset(d_y, 0xFF, size_t(n) * rows * 4), "poison y");
    const std::string what = name_of("matvec_swiglu", type, rows, cols, n);
    if (!cuda::matvec_swiglu(g, u, d_x, n, d_y, nullptr)) {
      ++ck.result.cases;
      ck.result.failures.push_back(ck.label + what +
                                   ": refused two matrices of the same type and shape");
      return;
    }
    ok(cudaDeviceSynchronize(), "matvec_swiglu");
    const auto got = download(d_y, size_t(n) * rows);
    const HostProduct want = host_swiglu(type, wg, wu, rows, cols, ck.as_read(type, x), n);
    ck.compare(what, got, want.y, want.magnitude, rows);
    if (n == 1)
      alone = got;
    else
      ck.same_bits(what, got, alone, 0);
  }
}

// Each token of x (`cols` values) normalized by RMSNorm with `gamma` as the int8 kernel folds
// the norm into a projection: the sum of squares in the kernel's order
// (cuda_math::warp_order_sum_squares), then cuda_math::rms_inv and rms_normalized.
std::vector<float> host_rmsnorm(const std::vector<float>& x, const std::vector<float>& gamma,
                                int cols, float eps) {
  std::vector<float> normed(x.size());
  for (size_t t = 0; t < x.size() / size_t(cols); ++t) {
    const float* xt = x.data() + t * size_t(cols);
    const float inv = cuda_math::rms_inv(cuda_math::warp_order_sum_squares(xt, cols), cols, eps);
    for (int i = 0; i < cols; ++i)
      normed[t * size_t(cols) + size_t(i)] =
          cuda_math::rms_normalized(xt[i], inv, gamma[size_t(i)]);
  }
  return normed;
}

// A residual stream of `tokens` tokens (not of unit size) and a norm's weights, on the device,
// with the host's norm of it (host_rmsnorm): the input of a launch with the norm folded in.
struct NormInput {
  std::vector<float> normed;
  const float* d_x;
  const float* d_gamma;
  float eps;
};
NormInput norm_input(Device& dev, int tokens, int cols, std::mt19937& rng) {
  auto x = random_floats(size_t(tokens) * cols, rng);
  for (float& v : x) v *= 4.0f;
  const auto gamma = random_floats(size_t(cols), rng);
  const float eps = 1e-6f;
  return {host_rmsnorm(x, gamma, cols, eps), dev.copy(x), dev.copy(gamma), eps};
}

// A launch only the int8 kernel takes (the RMSNorm folded in): counts the case and records a
// failure when another kernel queued it or the int8 kernel refused it. True when the int8 kernel
// queued it, so that there is a result to check.
bool queued_by_int8_only(Checker& ck, bool queued, const std::string& what) {
  ++ck.result.cases;
  if (queued != ck.int8)
    ck.result.failures.push_back(ck.label + what +
                                 (queued ? ": queued by a kernel other than int8"
                                         : ": refused by the int8 kernel"));
  return queued && ck.int8;
}

// The int8 kernel with the RMSNorm before a projection folded in (matvec_shared_input_normed,
// matvec_swiglu_normed), at 1, 3 and 8 tokens, against the host's norm (host_rmsnorm) and then
// the product of its quantized activations. The other kernels must refuse it and queue nothing.
void check_normed(Checker& ck, GgmlType type, int rows, int cols, std::mt19937& rng) {
  Device dev;
  const auto wg = random_rows(type, rows, cols, rng), wu = random_rows(type, rows, cols, rng);
  const cuda::DeviceMatrix g = upload_matrix(dev, type, wg, rows, cols);
  const cuda::DeviceMatrix u = upload_matrix(dev, type, wu, rows, cols);
  const int max_tokens = cuda::kMaxMatvecTokens;
  const NormInput in = norm_input(dev, max_tokens, cols, rng);
  float* d_y = dev.alloc<float>(size_t(max_tokens) * rows);
  const auto xr = ck.as_read(type, in.normed);
  const cuda::MatvecTarget target{.w = &g, .y = d_y, .bias = nullptr};
  std::vector<float> alone[2];
  for (const int n : {1, 3, max_tokens}) {
    for (int glu = 0; glu < 2; ++glu) {
      const size_t n_out = size_t(n) * rows;
      ok(cudaMemset(d_y, 0xFF, n_out * 4), "poison y");
      const std::string what =
          name_of(glu ? "matvec_swiglu_normed" : "matvec_shared_input_normed", type, rows, cols, n);
      const bool queued =
          glu ? cuda::matvec_swiglu_normed(g, u, in.d_x, in.d_gamma, in.eps, n, d_y, nullptr)
              : cuda::matvec_shared_input_normed(&target, 1, in.d_x, in.d_gamma, in.eps, n,
                                                 nullptr);
      if (!queued_by_int8_only(ck, queued, what)) continue;
      ok(cudaDeviceSynchronize(), what.c_str());
      const auto got = download(d_y, n_out);
      const HostProduct want = glu ? host_swiglu(type, wg, wu, rows, cols, xr, n)
                                   : host_product(type, wg, rows, cols, xr, n);
      ck.compare(what, got, want.y, want.magnitude, rows);
      if (n == 1)
        alone[glu] = got;
      else
        ck.same_bits(what, got, alone[glu], 0);
    }
  }
}

// The Q/K/V launch as run_layers queues it for a step with the int8 kernel: the attention norm
// folded into one matvec_shared_input_normed over Q (q_rows rows), K and V (kv_rows each; V of
// its own type, launched apart, as Q4_K_M models have it), each with a bias as qwen2's, at 1, 3
// and 8 tokens. Each matrix against the host's norm (host_rmsnorm), the product of the norm's
// activations quantized for its type, and the bias; a batch's first token has its bits alone.
// The other kernels must refuse it and queue nothing.
void check_normed_qkv(Checker& ck, GgmlType type, GgmlType v_type, int q_rows, int kv_rows,
                      int cols, std::mt19937& rng) {
  Device dev;
  const int max_tokens = cuda::kMaxMatvecTokens;
  const char* names[3] = {"Q", "K", "V"};
  const int rows[3] = {q_rows, kv_rows, kv_rows};
  const GgmlType types[3] = {type, type, v_type};
  const NormInput in = norm_input(dev, max_tokens, cols, rng);
  std::vector<std::byte> w[3];
  std::vector<float> bias[3], xr[3], alone[3];
  cuda::DeviceMatrix ms[3];
  cuda::MatvecTarget targets[3];
  for (int i = 0; i < 3; ++i) {
    w[i] = random_rows(types[i], rows[i], cols, rng);
    bias[i] = random_floats(size_t(rows[i]), rng);
    xr[i] = ck.as_read(types[i], in.normed);
    ms[i] = upload_matrix(dev, types[i], w[i], rows[i], cols);
    targets[i] = {.w = &ms[i],
                  .y = dev.alloc<float>(size_t(max_tokens) * rows[i]),
                  .bias = dev.copy(bias[i])};
  }
  const std::string shape = type_name(type) + ", " + type_name(type) + ", " + type_name(v_type) +
                            " " + std::to_string(q_rows) + "+" + std::to_string(kv_rows) + "+" +
                            std::to_string(kv_rows) + "x" + std::to_string(cols);
  for (const int n : {1, 3, max_tokens}) {
    for (int i = 0; i < 3; ++i)
      ok(cudaMemset(targets[i].y, 0xFF, size_t(n) * rows[i] * 4), "poison y");
    const std::string what = "matvec_shared_input_normed Q/K/V " + shape + ", bias, " +
                             std::to_string(n) + " token" + (n > 1 ? "s" : "");
    const bool queued =
        cuda::matvec_shared_input_normed(targets, 3, in.d_x, in.d_gamma, in.eps, n, nullptr);
    if (!queued_by_int8_only(ck, queued, what)) continue;
    ok(cudaDeviceSynchronize(), what.c_str());
    for (int i = 0; i < 3; ++i) {
      const std::string piece = what + ", " + names[i] + " (" + type_name(types[i]) + " " +
                                std::to_string(rows[i]) + " rows)";
      const auto got = download(targets[i].y, size_t(n) * rows[i]);
      HostProduct want = host_product(types[i], w[i], rows[i], cols, xr[i], n);
      for (size_t j = 0; j < want.y.size(); ++j) want.y[j] += bias[i][j % size_t(rows[i])];
      ck.compare(piece, got, want.y, want.magnitude, rows[i]);
      if (n == 1)
        alone[i] = got;
      else
        ck.same_bits(piece, got, alone[i], 0);
    }
  }
}

// A GEMM's tiles: rows [3, rows - 2) of a matrix dequantized as F32 and as fp16 against the
// host's dequantization (within a float's rounding, and within fp16's), by chunks of 32 values
// where rows are made of them and value by value where not (102 float values).
void check_tiles(Checker& ck, GgmlType type, int rows, int cols, std::mt19937& rng) {
  Device dev;
  const auto w = random_rows(type, rows, cols, rng);
  const cuda::DeviceMatrix m = upload_matrix(dev, type, w, rows, cols);
  const int row0 = 3, n_rows = rows - 5;
  const size_t n = size_t(n_rows) * cols;
  std::vector<float> want(n);
  for (int r = 0; r < n_rows; ++r)
    gguf::dequantize_row(type, w.data() + size_t(row0 + r) * m.row_bytes,
                         want.data() + size_t(r) * cols, cols);
  float* d32 = dev.alloc<float>(n);
  uint16_t* d16 = dev.alloc<uint16_t>(n);
  ok(cudaMemset(d32, 0xFF, n * 4), "poison tile");
  ok(cudaMemset(d16, 0xFF, n * 2), "poison tile");
  cuda::dequantize_rows(m, row0, n_rows, d32, nullptr);
  cuda::dequantize_rows_f16(m, row0, n_rows, d16, nullptr);
  ok(cudaDeviceSynchronize(), "dequantize_rows");
  const auto got32 = download(d32, n);
  const auto got16 = download(d16, n);
  const std::string what = name_of("tile", type, n_rows, cols, 1);
  // A K-quant's value is a difference of two products (scale times value, minus min): the
  // device may round each once (fused multiply-add), so the float tolerance is relative to the
  // row's largest value; fp16 adds its own rounding, relative to the value.
  std::vector<double> row_max(size_t(n_rows), 0.0);
  for (size_t i = 0; i < n; ++i)
    row_max[i / size_t(cols)] = std::max(row_max[i / size_t(cols)], double(std::abs(want[i])));
  for (const bool half : {false, true}) {
    ++ck.result.cases;
    for (size_t i = 0; i < n; ++i) {
      const double got = half ? double(cuda_math::half_to_float(got16[i])) : double(got32[i]);
      const double tol =
          (half ? std::abs(want[i]) / 1024 : 0.0) + 1e-6 * row_max[i / size_t(cols)] + 1e-7;
      if (std::isfinite(got) && std::abs(got - want[i]) <= tol) continue;
      std::ostringstream s;
      s << what << (half ? " as fp16" : " as F32") << ": row " << i / size_t(cols) << " column "
        << i % size_t(cols) << ": " << got << ", host " << want[i];
      ck.result.failures.push_back(s.str());
      break;
    }
  }
}

// The fp16 GEMM's activations: a 7-token batch of `cols` values, with values beyond fp16's range
// and below its normal range, rounded to fp16 against the host's rounding, bit for bit.
void check_round_to_f16(Checker& ck, int cols, std::mt19937& rng) {
  Device dev;
  auto x = random_floats(size_t(7) * cols, rng);
  x[0] = 1e6f;
  x[1] = -70000.0f;
  x[2] = 1e-6f;
  x[3] = -3e-8f;
  x[4] = INFINITY;
  x[5] = 65519.0f;
  uint16_t* dx = dev.alloc<uint16_t>(x.size());
  ok(cudaMemset(dx, 0xFF, x.size() * 2), "poison activations");
  cuda::round_to_f16(dev.copy(x), x.size(), dx, nullptr);
  ok(cudaDeviceSynchronize(), "round_to_f16");
  const auto gotx = download(dx, x.size());
  ++ck.result.cases;
  for (size_t i = 0; i < x.size(); ++i)
    if (gotx[i] != cuda_math::float_to_half_saturated(x[i])) {
      ck.result.failures.push_back("round_to_f16: value " + std::to_string(i) + " (" +
                                   std::to_string(x[i]) + ") differs from the host's bits");
      break;
    }
}

// A cuBLAS handle on the default stream, pedantic as the backend's (CudaContext).
class Cublas {
 public:
  Cublas() {
    if (cublasCreate(&handle_) != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("CUDA kernel check: cublasCreate failed");
    if (cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS)
      throw std::runtime_error("CUDA kernel check: cublasSetMathMode failed");
  }
  ~Cublas() {
    if (handle_) cublasDestroy(handle_);
  }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// The fp16 GEMM of long batches (GHOSTLINE_CUDA_GEMM=f16) as the backend runs it
// (cuda::matmul_tiles given fp16 activations: the activations rounded to fp16, the weights
// dequantized to fp16 tiles of `tile_rows` rows, or an F16 matrix read in place, cublasGemmEx
// with F32 sums) against the host's product of the same fp16 operands (cuda_math::float_to_half
// as dequantize_rows_f16 rounds, float_to_half_saturated as round_to_f16 does). Within 1e-3 of
// each value's magnitude: F32 sums of fp16 products, and a weight that the device's
// dequantization may put one fp16 step away (check_tiles).
void check_gemm_f16(Checker& ck, GgmlType type, int rows, int cols, int n_tokens, int tile_rows,
                    std::mt19937& rng) {
  Device dev;
  const auto w = random_rows(type, rows, cols, rng);
  const cuda::DeviceMatrix m = upload_matrix(dev, type, w, rows, cols);
  const auto x = random_floats(size_t(n_tokens) * cols, rng);
  const float* d_x = dev.copy(x);
  uint16_t* d_x16 = dev.alloc<uint16_t>(x.size());
  uint16_t* d_tile = dev.alloc<uint16_t>(size_t(std::min(tile_rows, rows)) * cols);
  float* d_y = dev.alloc<float>(size_t(n_tokens) * rows);
  ok(cudaMemset(d_y, 0xFF, size_t(n_tokens) * rows * 4), "poison y");
  std::string what = name_of("matmul_tiles (fp16)", type, rows, cols, n_tokens);
  what += type == GgmlType::F16 ? ", in place" : ", tiles of " + std::to_string(tile_rows) +
                                                     " rows";
  const Cublas blas;
  try {
    cuda::matmul_tiles(blas.get(), m, d_x, n_tokens, d_x16, d_tile, tile_rows, d_y, nullptr);
  } catch (const std::runtime_error& e) {  // a cuBLAS status
    ++ck.result.cases;
    ck.result.failures.push_back(what + ": " + e.what());
    return;
  }
  ok(cudaDeviceSynchronize(), what.c_str());
  const auto got = download(d_y, size_t(n_tokens) * rows);
  // The operands as the device multiplies them, as an F32 matrix and activations.
  std::vector<float> w16(size_t(rows) * cols), x16(x.size());
  const size_t row_bytes = ggml_row_bytes(type, cols);
  for (int r = 0; r < rows; ++r)
    gguf::dequantize_row(type, w.data() + size_t(r) * row_bytes, w16.data() + size_t(r) * cols,
                         cols);
  for (float& v : w16) v = cuda_math::half_to_float(cuda_math::float_to_half(v));
  for (size_t i = 0; i < x.size(); ++i)
    x16[i] = cuda_math::half_to_float(cuda_math::float_to_half_saturated(x[i]));
  std::vector<std::byte> w32(w16.size() * sizeof(float));
  std::memcpy(w32.data(), w16.data(), w32.size());
  const HostProduct want = host_product(GgmlType::F32, w32, rows, cols, x16, n_tokens);
  ck.compare(what, got, want.y, want.magnitude, rows, 1e-3);
}

// The greedy token of rows with many ties (few distinct values) against the host's argmax.
// `planted`: the largest value only at a few random positions of each row (mostly past the
// first of the ranges a long row is split into), so that the winner is found in a later range,
// often with a tie in another.
void check_argmax(Checker& ck, int n_rows, int n, std::mt19937& rng, bool planted = false) {
  Device dev;
  std::vector<float> logits(size_t(n_rows) * n);
  for (float& v : logits) v = float(int(rng() % (planted ? 6 : 7))) - 3.0f;
  if (planted)
    for (int r = 0; r < n_rows; ++r)
      for (int k = 0; k < 1 + r % 3; ++k) logits[size_t(r) * n + rng() % uint32_t(n)] = 3.0f;
  const float* d_logits = dev.copy(logits);
  int32_t* d_out = dev.alloc<int32_t>(size_t(n_rows));
  ok(cudaMemset(d_out, 0xFF, size_t(n_rows) * 4), "poison ids");
  const size_t scratch = cuda::argmax_scratch_bytes(n_rows, n);
  void* d_scratch = scratch > 0 ? static_cast<void*>(dev.alloc<std::byte>(scratch)) : nullptr;
  if (d_scratch) ok(cudaMemset(d_scratch, 0xFF, scratch), "poison the winners of the parts");
  cuda::argmax_rows(d_logits, n_rows, n, d_scratch, d_out, nullptr);
  ok(cudaDeviceSynchronize(), "argmax_rows");
  const auto got = download(d_out, size_t(n_rows));
  ++ck.result.cases;
  for (int r = 0; r < n_rows; ++r) {
    const auto row = logits.begin() + ptrdiff_t(r) * n;
    const auto want = int32_t(std::max_element(row, row + n) - row);
    if (got[size_t(r)] != want) {
      ck.result.failures.push_back("argmax_rows " + std::to_string(n_rows) + "x" +
                                   std::to_string(n) + ": row " + std::to_string(r) + " gave " +
                                   std::to_string(got[size_t(r)]) + ", host " +
                                   std::to_string(want));
      return;
    }
  }
}

}  // namespace

KernelCheck check_cuda_kernels() {
  Checker ck;
  std::mt19937 rng(20261127);
  const GgmlType blocks32[] = {GgmlType::Q8_0, GgmlType::Q4_0,   GgmlType::Q4_1,
                               GgmlType::Q5_0, GgmlType::Q5_1,   GgmlType::IQ4_NL};
  const GgmlType blocks256[] = {GgmlType::IQ4_XS, GgmlType::Q4_K, GgmlType::Q5_K,
                                GgmlType::Q6_K};
  const GgmlType floats[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16};
  // Every mat-vec case with each kernel decode may use (batches use the blocks kernel).
  const cuda::MatvecKernel selected = cuda::selected_matvec_kernel();
  for (const cuda::MatvecKernel kernel :
       {cuda::MatvecKernel::Blocks, cuda::MatvecKernel::Rows, cuda::MatvecKernel::Int8}) {
    cuda::select_matvec_kernel(kernel);
    ck.label = kernel == cuda::MatvecKernel::Rows   ? "rows kernel: "
               : kernel == cuda::MatvecKernel::Int8 ? "int8 kernel: "
                                                    : "";
    ck.int8 = kernel == cuda::MatvecKernel::Int8;
    // Columns: one segment, two (two warps a row), five (four warps: the 0.5B down projection).
    for (const GgmlType t : blocks32)
      for (const int cols : {96, 2048, 4864}) check_matvec(ck, t, 37, cols, false, false, rng);
    for (const GgmlType t : blocks256)
      for (const int cols : {256, 2048, 4864}) check_matvec(ck, t, 37, cols, false, false, rng);
    // Float rows: a multiple of 4 but not of 32 (a tail after the chunks), and not of 4 (value
    // by value).
    for (const GgmlType t : floats)
      for (const int cols : {100, 102, 1024}) check_matvec(ck, t, 37, cols, false, false, rng);
    // Rows that fill one block of rows or many (or, for the rows kernel, give a warp several),
    // bias and accumulation.
    check_matvec(ck, GgmlType::Q8_0, 1, 896, true, false, rng);
    check_matvec(ck, GgmlType::Q8_0, 133, 896, true, false, rng);
    check_matvec(ck, GgmlType::Q8_0, 20000, 96, true, true, rng);
    check_matvec(ck, GgmlType::Q4_K, 133, 4864, false, true, rng);
    check_matvec(ck, GgmlType::Q5_0, 9, 4864, true, true, rng);
    check_shared_input(ck, GgmlType::Q8_0, GgmlType::Q8_0, 896, rng);
    check_shared_input(ck, GgmlType::Q4_K, GgmlType::Q6_K, 1536, rng);
    check_swiglu(ck, GgmlType::Q8_0, 37, 896, rng);
    check_swiglu(ck, GgmlType::Q4_K, 37, 4864, rng);
    check_swiglu(ck, GgmlType::F16, 37, 1024, rng);
    check_normed(ck, GgmlType::Q8_0, 37, 896, rng);
    check_normed(ck, GgmlType::Q4_K, 21, 1536, rng);
    check_normed(ck, GgmlType::Q5_0, 9, 4864, rng);
    // Decode's Q/K/V with the norm folded in: the 1.5B's shapes (V in Q6_K as Q4_K_M has it)
    // and the 0.5B's.
    check_normed_qkv(ck, GgmlType::Q4_K, GgmlType::Q6_K, 1536, 256, 1536, rng);
    check_normed_qkv(ck, GgmlType::Q8_0, GgmlType::Q8_0, 896, 128, 896, rng);
    // Gate and up of many rows: the int8 kernel gives a block several groups of rows.
    check_swiglu(ck, GgmlType::Q8_0, 20000, 96, rng);
  }
  cuda::select_matvec_kernel(selected);
  ck.label.clear();
  ck.int8 = false;
  for (const GgmlType t : blocks32) check_tiles(ck, t, 19, 96, rng);
  for (const GgmlType t : blocks256) check_tiles(ck, t, 19, 512, rng);
  for (const GgmlType t : floats) check_tiles(ck, t, 19, 102, rng);
  check_round_to_f16(ck, 102, rng);
  // Several tiles with a short last one (rows not a multiple of 8), one whole tile, an F16
  // matrix in place.
  check_gemm_f16(ck, GgmlType::Q8_0, 37, 96, 40, 16, rng);
  check_gemm_f16(ck, GgmlType::Q4_K, 40, 256, 40, 40, rng);
  check_gemm_f16(ck, GgmlType::F16, 37, 96, 40, 8, rng);
  check_argmax(ck, 1, 151936, rng);
  check_argmax(ck, 8, 1000, rng);
  check_argmax(ck, 3, 5, rng);
  check_argmax(ck, 6, 151936, rng, /*planted=*/true);
  check_argmax(ck, 3, 40000, rng, /*planted=*/true);
  return ck.result;
}

}  // namespace ghostline::engine
