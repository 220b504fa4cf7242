// The kernels of the CUDA backend. Each is the plain parallel form of a loop of the reference
// backend: which thread computes which element is decided here, the element math lives in
// cuda_math.h. Weight types are a template parameter only of the two kernels that read weights.
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include <algorithm>

#include "engine/backend/cuda/cuda_kernels.cuh"
#include "engine/backend/cuda/cuda_math.h"
#include "engine/gguf/ggml_type.h"

namespace ghostline::engine::cuda {
namespace {

namespace m = cuda_math;

constexpr int kWarp = 32;
constexpr int kMatvecWarps = 4;  // warps per block of the mat-vec kernel

template <GgmlType T>
__device__ __forceinline__ float dequant(const uint8_t* row, int e) {
  if constexpr (T == GgmlType::F32) return m::dequant_f32(row, e);
  if constexpr (T == GgmlType::F16) return m::dequant_f16(row, e);
  if constexpr (T == GgmlType::BF16) return m::dequant_bf16(row, e);
  if constexpr (T == GgmlType::Q8_0) return m::dequant_q8_0(row, e);
  if constexpr (T == GgmlType::Q4_0) return m::dequant_q4_0(row, e);
  if constexpr (T == GgmlType::Q4_1) return m::dequant_q4_1(row, e);
  if constexpr (T == GgmlType::Q5_0) return m::dequant_q5_0(row, e);
  if constexpr (T == GgmlType::Q5_1) return m::dequant_q5_1(row, e);
  if constexpr (T == GgmlType::IQ4_NL) return m::dequant_iq4_nl(row, e);
  if constexpr (T == GgmlType::IQ4_XS) return m::dequant_iq4_xs(row, e);
  if constexpr (T == GgmlType::Q4_K) return m::dequant_q4_k(row, e);
  if constexpr (T == GgmlType::Q5_K) return m::dequant_q5_k(row, e);
  if constexpr (T == GgmlType::Q6_K) return m::dequant_q6_k(row, e);
  return 0.0f;
}

// Values kChunk * c .. kChunk * c + 31 of a row.
template <GgmlType T>
__device__ __forceinline__ void dequant_chunk(const uint8_t* row, int c, float* w) {
  if constexpr (T == GgmlType::F32) m::chunk_f32(row, c, w);
  if constexpr (T == GgmlType::F16) m::chunk_f16(row, c, w);
  if constexpr (T == GgmlType::BF16) m::chunk_bf16(row, c, w);
  if constexpr (T == GgmlType::Q8_0) m::chunk_q8_0(row, c, w);
  if constexpr (T == GgmlType::Q4_0) m::chunk_q4_0(row, c, w);
  if constexpr (T == GgmlType::Q4_1) m::chunk_q4_1(row, c, w);
  if constexpr (T == GgmlType::Q5_0) m::chunk_q5_0(row, c, w);
  if constexpr (T == GgmlType::Q5_1) m::chunk_q5_1(row, c, w);
  if constexpr (T == GgmlType::IQ4_NL) m::chunk_iq4_nl(row, c, w);
  if constexpr (T == GgmlType::IQ4_XS) m::chunk_iq4_xs(row, c, w);
  if constexpr (T == GgmlType::Q4_K) m::chunk_q4_k(row, c, w);
  if constexpr (T == GgmlType::Q5_K) m::chunk_q5_k(row, c, w);
  if constexpr (T == GgmlType::Q6_K) m::chunk_q6_k(row, c, w);
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over a block of blockDim.x (a multiple of 32, at most 1024) threads; every thread gets it.
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  v = warp_sum(v);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < int(blockDim.x / kWarp) ? partial[lane] : 0.0f;
    s = warp_sum(s);
    if (lane == 0) total = s;
  }
  __syncthreads();
  return total;
}

// Bytes of a segment of a row: 32 chunks, one per lane (the chunks of a type are whole blocks,
// or eight to a K-quant super-block).
template <GgmlType T>
__host__ __device__ constexpr int segment_bytes() {
  switch (T) {
    case GgmlType::F32:
      return kWarp * m::kChunk * 4;
    case GgmlType::F16:
    case GgmlType::BF16:
      return kWarp * m::kChunk * 2;
    case GgmlType::Q8_0:
      return kWarp * m::kQ8_0Bytes;
    case GgmlType::Q4_0:
      return kWarp * m::kQ4_0Bytes;
    case GgmlType::Q4_1:
      return kWarp * m::kQ4_1Bytes;
    case GgmlType::Q5_0:
      return kWarp * m::kQ5_0Bytes;
    case GgmlType::Q5_1:
      return kWarp * m::kQ5_1Bytes;
    case GgmlType::IQ4_NL:
      return kWarp * m::kIq4NlBytes;
    case GgmlType::IQ4_XS:
      return kWarp / 8 * m::kIq4XsBytes;
    case GgmlType::Q4_K:
      return kWarp / 8 * m::kQ4_KBytes;
    case GgmlType::Q5_K:
      return kWarp / 8 * m::kQ5_KBytes;
    case GgmlType::Q6_K:
      return kWarp / 8 * m::kQ6_KBytes;
    default:
      return 16;
  }
}

// Starts copying `bytes` (even) from global to shared memory, consecutive lanes copying
// consecutive words so that each instruction of the warp reads one contiguous span of the row,
// with the widest words both ends' alignment and the length allow (a warp's segment in shared
// memory is only as aligned as the segment size allows: Q6_K's 840 bytes, 8). The words travel
// as asynchronous copies (cp.async), which hold no registers: the whole segment is in flight at
// once. The caller commits them as a group: warp_copy_wait() commits and waits for every copy
// started before it; the rows kernel keeps several groups in flight. Only rows of 2-byte
// alignment (odd shapes) are copied by plain loads and stores.
template <int kWordBytes>
__device__ __forceinline__ void warp_copy_words(uint8_t* dst, const uint8_t* src, int bytes,
                                                int lane) {
  for (int i = lane * kWordBytes; i < bytes; i += kWarp * kWordBytes)
    __pipeline_memcpy_async(dst + i, src + i, kWordBytes);
}

__device__ __forceinline__ void warp_copy_issue(uint8_t* dst, const uint8_t* src, int bytes,
                                                int lane) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) |
                      static_cast<uintptr_t>(bytes);
  if (a % 16 == 0) {
    warp_copy_words<16>(dst, src, bytes, lane);
  } else if (a % 8 == 0) {
    warp_copy_words<8>(dst, src, bytes, lane);
  } else if (a % 4 == 0) {
    warp_copy_words<4>(dst, src, bytes, lane);
  } else {
    for (int i = lane; i < bytes / 2; i += kWarp)
      reinterpret_cast<uint16_t*>(dst)[i] = reinterpret_cast<const uint16_t*>(src)[i];
  }
}

__device__ __forceinline__ void warp_copy_wait() {
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncwarp();  // every lane's words, visible to the whole warp
}

// One lane's chunk of a row (32 dequantized values) times one token's 32 activations: four
// interleaved partial sums, then their sum. Both mat-vec kernels form every sum this way, so
// they give the same bits.
__device__ __forceinline__ float chunk_dot(const float* wv, const float4* xp) {
  float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int i = 0; i < m::kChunk / 4; ++i) {
    const float4 v = xp[i];
    p[0] += wv[4 * i] * v.x;
    p[1] += wv[4 * i + 1] * v.y;
    p[2] += wv[4 * i + 2] * v.z;
    p[3] += wv[4 * i + 3] * v.w;
  }
  return (p[0] + p[1]) + (p[2] + p[3]);
}

// A row is read in segments of 32 chunks of 32 values, by one warp or, for rows of several
// segments, by several (cuda_math::matvec_split: warp `part` takes every warps_per_row-th
// segment). For each segment the warp copies it into shared memory with coalesced loads
// (consecutive lanes, consecutive words; all of them in flight at once), then each lane
// dequantizes one chunk from there into registers and multiplies it with every token's 32
// activations (16-byte loads). A token's sum is formed in the same order whatever the number of
// tokens: per lane over its chunks in four interleaved partial sums, then over the lanes, then
// over the row's warps in part order. Rows whose length is not a multiple of 4 (float types
// only: quantized rows are whole blocks) are read value by value, by the row's first warp. With
// `accumulate`, y += W x (the residual add of a projection); with a `bias`, y = W x + bias.
//
// With kGlu, the warp does the same for row r of a second matrix of the same shape (`w_up`),
// whose segment it copies together with the first's, and writes swiglu(W x, W_up x): the gate
// and up projections and their SwiGLU in one kernel.
//
// One launch serves up to kMaxMatvecParts matrices of the same type and columns that read the
// same activations (Q, K and V): the blocks are dealt to them in order, each part from its
// first_block on.
struct MatvecPart {
  const uint8_t* w;
  const uint8_t* w_up;  // kGlu only
  size_t row_bytes;
  int rows;
  float* y;
  const float* bias;
  int first_block;
};
constexpr int kMaxMatvecParts = 3;
struct MatvecParts {
  MatvecPart part[kMaxMatvecParts];
  int n;
};

// The end of a row in the blocks and int8 kernels, called by every thread of the block (it
// holds a barrier): each warp's sums of n tokens over its lanes, then the row's first warp
// (`writes`) adds its warps' in part order and lane t writes token t0 + t: swiglu of the two
// matrices' sums with kGlu, else the sum (added to y with `accumulate`), plus the part's bias where
// it has one.
template <bool kGlu, int kMatrices = kGlu ? 2 : 1>
__device__ __forceinline__ void finish_rows(
    const float (&sums)[kMatrices][kMaxMatvecTokens],
    float (&partial)[kMatvecWarps][kMatrices][kMaxMatvecTokens], int n, bool writes,
    int warps_per_row, const MatvecPart& mp, int row, int t0, bool accumulate) {
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
#pragma unroll
  for (int t = 0; t < kMaxMatvecTokens; ++t) {
    if (t >= n) break;
#pragma unroll
    for (int mat = 0; mat < kMatrices; ++mat) {
      const float s = warp_sum(sums[mat][t]);
      if (lane == 0) partial[warp][mat][t] = s;
    }
  }
  __syncthreads();
  if (!writes || lane >= n) return;
  const int t = lane;
  float s[kMatrices];
#pragma unroll
  for (int mat = 0; mat < kMatrices; ++mat) {
    s[mat] = partial[warp][mat][t];
    for (int p = 1; p < warps_per_row; ++p) s[mat] += partial[warp + p][mat][t];
  }
  if constexpr (kGlu) {
    mp.y[size_t(t0 + t) * mp.rows + row] = m::swiglu(s[0], s[kMatrices - 1]);
  } else {
    float& out = mp.y[size_t(t0 + t) * mp.rows + row];
    out = accumulate ? out + s[0] : s[0];
    if (mp.bias) out += mp.bias[row];
  }
}

template <GgmlType T, bool kGlu>
__global__ void __launch_bounds__(kMatvecWarps* kWarp)
    matvec_kernel(MatvecParts parts, int cols, const float* x, int n_tokens, bool accumulate,
                  int warps_per_row) {
  // The part of this block, chosen without indexing the parameter array by a variable.
  const int b = blockIdx.x;
  const int which =
      m::matvec_part(b, parts.n, parts.part[1].first_block, parts.part[2].first_block);
  const MatvecPart& mp = which == 2 ? parts.part[2] : which == 1 ? parts.part[1] : parts.part[0];
  const uint8_t *w = mp.w, *w_up = mp.w_up;
  const size_t row_bytes = mp.row_bytes;
  const int rows = mp.rows;
  constexpr int kSegment = segment_bytes<T>();
  constexpr int kMatrices = kGlu ? 2 : 1;
  __shared__ __align__(16) uint8_t segments[kMatvecWarps][kMatrices][kSegment];
  __shared__ float partial[kMatvecWarps][kMatrices][kMaxMatvecTokens];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const m::MatvecSplit split{warps_per_row, kMatvecWarps / warps_per_row};
  const int part = m::matvec_row_part(warp, split);
  const int row = m::matvec_row(b, mp.first_block, warp, split);
  // A warp past the last row still reaches the block's barrier below.
  const bool active = row < rows;
  float sums[kMatrices][kMaxMatvecTokens];
  // float4 loads need every token's activations 16-byte aligned.
  const int chunks = cols % 4 == 0 ? cols / m::kChunk : 0;
  const uint8_t* rows_of[kMatrices];
#pragma unroll
  for (int mat = 0; mat < kMatrices; ++mat) {
    rows_of[mat] = (mat == 0 ? w : w_up) + size_t(active ? row : 0) * row_bytes;
#pragma unroll
    for (int t = 0; t < kMaxMatvecTokens; ++t) sums[mat][t] = 0.0f;
  }
  if (active) {
    for (int c0 = part * kWarp; c0 < chunks; c0 += kWarp * warps_per_row) {
      const size_t begin = size_t(c0 / kWarp) * kSegment;
      const int bytes = int(min(size_t(kSegment), row_bytes - begin));
      // Both matrices' segments are in flight before either is used.
#pragma unroll
      for (int mat = 0; mat < kMatrices; ++mat)
        warp_copy_issue(segments[warp][mat], rows_of[mat] + begin, bytes, lane);
      warp_copy_wait();
      const int c = c0 + lane;
      if (c < chunks) {
#pragma unroll
        for (int mat = 0; mat < kMatrices; ++mat) {
          float wv[m::kChunk];
          dequant_chunk<T>(segments[warp][mat], lane, wv);
          float* sum = sums[mat];
#pragma unroll
          for (int t = 0; t < kMaxMatvecTokens; ++t) {
            if (t >= n_tokens) break;
            sum[t] += chunk_dot(wv, reinterpret_cast<const float4*>(x + size_t(t) * cols +
                                                                     size_t(c) * m::kChunk));
          }
        }
      }
      __syncwarp();  // the segments are read before the next ones overwrite them
    }
    if (part == 0) {
#pragma unroll
      for (int mat = 0; mat < kMatrices; ++mat) {
        for (int e = chunks * m::kChunk + lane; e < cols; e += kWarp) {
          const float we = dequant<T>(rows_of[mat], e);
#pragma unroll
          for (int t = 0; t < kMaxMatvecTokens; ++t)
            if (t < n_tokens) sums[mat][t] += we * x[size_t(t) * cols + e];
        }
      }
    }
  }
  finish_rows<kGlu>(sums, partial, n_tokens, active && part == 0, warps_per_row, mp, row, 0,
                    accumulate);
}

// The mat-vec of a single token (decode) with the work dealt by rows instead of blocks: warp w of
// the launch takes rows w, w + (warps of the launch), ... of the parts' rows laid end to end, and
// keeps kDepth segments in flight (cp.async into a ring of shared buffers): while it computes one
// segment the next ones travel, so a warp that has several rows reads the memory without a gap.
// A lane's sums are kept apart by the part of matvec_kernel's split the segment falls in, and the
// parts' warp sums are added in part order: the bits matvec_kernel gives. Rows must be whole
// chunks (cols a multiple of kChunk); with the activations of one token, 16-byte aligned.
template <GgmlType T, bool kGlu>
__host__ __device__ constexpr int rows_depth() {
  constexpr int per_segment = kMatvecWarps * (kGlu ? 2 : 1) * segment_bytes<T>();
  constexpr int limit = 40 * 1024;  // of static shared memory per block
  return per_segment * 3 <= limit ? 3 : per_segment * 2 <= limit ? 2 : 0;
}

template <GgmlType T, bool kGlu>
__global__ void __launch_bounds__(kMatvecWarps* kWarp)
    matvec_rows_kernel(MatvecParts parts, int cols, const float* x, bool accumulate,
                       int warps_per_row) {
  constexpr int kSegment = segment_bytes<T>();
  constexpr int kMatrices = kGlu ? 2 : 1;
  constexpr int kDepth = rows_depth<T, kGlu>();
  static_assert(kDepth >= 2, "launched only where two segments fit");
  constexpr int kMaxParts = 4;  // matvec_split's warps per row, at most
  __shared__ __align__(16) uint8_t ring[kMatvecWarps][kDepth][kMatrices][kSegment];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int first = blockIdx.x * kMatvecWarps + warp, stride = gridDim.x * kMatvecWarps;
  const int chunks = cols / m::kChunk;
  const int segments = (chunks + kWarp - 1) / kWarp;
  const int rows0 = parts.part[0].rows, rows1 = parts.n > 1 ? parts.part[1].rows : 0;
  const int total = rows0 + rows1 + (parts.n > 2 ? parts.part[2].rows : 0);
  const int items = first < total ? ((total - 1 - first) / stride + 1) * segments : 0;
  // The part and its row of item `it` (the parts chosen without indexing the parameter array by
  // a variable).
  auto locate = [&](int it, int& row) -> const MatvecPart& {
    const int g = first + (it / segments) * stride;
    row = g < rows0 ? g : g < rows0 + rows1 ? g - rows0 : g - rows0 - rows1;
    return g < rows0 ? parts.part[0] : g < rows0 + rows1 ? parts.part[1] : parts.part[2];
  };
  auto issue = [&](int it) {
    if (it < items) {
      int row;
      const MatvecPart& mp = locate(it, row);
      const size_t begin = size_t(it % segments) * kSegment;
      const int bytes = int(min(size_t(kSegment), mp.row_bytes - begin));
#pragma unroll
      for (int mat = 0; mat < kMatrices; ++mat)
        warp_copy_issue(ring[warp][it % kDepth][mat],
                        (mat == 0 ? mp.w : mp.w_up) + size_t(row) * mp.row_bytes + begin, bytes,
                        lane);
    }
    __pipeline_commit();  // an empty group past the end keeps the count of groups in step
  };
#pragma unroll
  for (int k = 0; k < kDepth - 1; ++k) issue(k);
  float acc[kMatrices][kMaxParts];
#pragma unroll
  for (int mat = 0; mat < kMatrices; ++mat)
#pragma unroll
    for (int q = 0; q < kMaxParts; ++q) acc[mat][q] = 0.0f;
  for (int it = 0; it < items; ++it) {
    issue(it + kDepth - 1);
    const int seg = it % segments, c = seg * kWarp + lane, q = seg % warps_per_row;
    // The item's activations, loaded while its weights arrive.
    float4 xv[m::kChunk / 4];
    if (c < chunks) {
#pragma unroll
      for (int i = 0; i < m::kChunk / 4; ++i)
        xv[i] = reinterpret_cast<const float4*>(x + size_t(c) * m::kChunk)[i];
    }
    __pipeline_wait_prior(kDepth - 1);  // item it's group; the later ones may still travel
    __syncwarp();
    if (c < chunks) {
#pragma unroll
      for (int mat = 0; mat < kMatrices; ++mat) {
        float wv[m::kChunk];
        dequant_chunk<T>(ring[warp][it % kDepth][mat], lane, wv);
        const float v = chunk_dot(wv, xv);
#pragma unroll
        for (int k = 0; k < kMaxParts; ++k)
          if (k == q) acc[mat][k] += v;
      }
    }
    __syncwarp();  // the slot is read before issue(it + kDepth) fills it again
    if (seg != segments - 1) continue;
    // The row is whole: each part's sum over the lanes, the parts in order.
    float total_of[kMatrices];
#pragma unroll
    for (int mat = 0; mat < kMatrices; ++mat) {
      float t = 0.0f;
#pragma unroll
      for (int k = 0; k < kMaxParts; ++k) {
        if (k < warps_per_row) {
          const float v = warp_sum(acc[mat][k]);
          t = k == 0 ? v : t + v;
        }
        acc[mat][k] = 0.0f;
      }
      total_of[mat] = t;
    }
    if (lane != 0) continue;
    int row;
    const MatvecPart& mp = locate(it, row);
    if constexpr (kGlu) {
      mp.y[row] = m::swiglu(total_of[0], total_of[kMatrices - 1]);
    } else {
      float out = accumulate ? mp.y[row] + total_of[0] : total_of[0];
      if (mp.bias) out += mp.bias[row];
      mp.y[row] = out;
    }
  }
  __pipeline_wait_prior(0);  // nothing left in flight when the warp leaves
}

// The int8 mat-vec (MatvecKernel::Int8): activations quantized to int8 as the CPU backend
// quantizes them, weights read in place as 32-bit words, products summed four bytes at a time by
// dp4a (cuda_math.h, "integer dot products"). Each block first quantizes the tokens'
// activations into shared memory (8 lanes per block of 32 values, a warp per block of 256, the
// scale from the block's largest magnitude, as the host rounds), then each of its rows is read by
// one to four warps: a row's chunks are cut into four parts of 8 values, and thread i of the row
// takes parts i, i + (threads of the row), ..., two words of weights each, consecutive threads
// reading consecutive words. A token's sum is formed in the same order whatever the number of
// tokens (per thread over its parts, over the lanes, over the row's warps in order), so a batch
// gives each token its bits alone. Tokens whose activations do not fit the shared buffer together
// go in groups, each group reading the rows again. A block takes `iters` consecutive groups of
// rows, so that a matrix of many rows (the output matrix) quantizes the activations fewer times.
constexpr int kInt8SharedBytes = 40 * 1024;  // the quantized activations of a group of tokens

__host__ __device__ constexpr int int8_activation_bytes(int cols, int block) {
  return cols + cols / block * 4;
}
__host__ __device__ constexpr int int8_token_group(int cols, int block) {
  const int g = kInt8SharedBytes / int8_activation_bytes(cols, block);
  return g < kMaxMatvecTokens ? g : kMaxMatvecTokens;
}

template <GgmlType T>
__device__ __forceinline__ m::WeightPart q8_weights(const uint8_t* row, int c, int p) {
  if constexpr (T == GgmlType::Q8_0) return m::q8_weights_q8_0(row, c, p);
  if constexpr (T == GgmlType::Q4_0) return m::q8_weights_q4_0(row, c, p);
  if constexpr (T == GgmlType::Q4_1) return m::q8_weights_q4_1(row, c, p);
  if constexpr (T == GgmlType::Q5_0) return m::q8_weights_q5_0(row, c, p);
  if constexpr (T == GgmlType::Q5_1) return m::q8_weights_q5_1(row, c, p);
  if constexpr (T == GgmlType::IQ4_NL) return m::q8_weights_iq4_nl(row, c, p);
  if constexpr (T == GgmlType::IQ4_XS) return m::q8_weights_iq4_xs(row, c, p);
  if constexpr (T == GgmlType::Q4_K) return m::q8_weights_q4_k(row, c, p);
  if constexpr (T == GgmlType::Q5_K) return m::q8_weights_q5_k(row, c, p);
  if constexpr (T == GgmlType::Q6_K) return m::q8_weights_q6_k(row, c, p);
  return {};
}

template <GgmlType T, bool kGlu, int kBlock>
__global__ void __launch_bounds__(kMatvecWarps* kWarp)
    matvec_int8_kernel(MatvecParts parts, int cols, const float* __restrict__ x, int n_tokens,
                       bool accumulate, int warps_per_row, int iters,
                       const float* __restrict__ norm_weight, float eps) {
  static_assert(kBlock == 32 || kBlock == m::kQK_K, "values per activation scale: 32 or 256");
  constexpr int kMatrices = kGlu ? 2 : 1;
  // The quantization of the activations: kVals values a lane, kLanes lanes a block, so
  // kBlocksPerPass blocks a warp at a time.
  constexpr int kVals = kBlock == 32 ? 4 : 8;
  constexpr int kLanes = kBlock / kVals;
  constexpr int kBlocksPerPass = kWarp / kLanes;
  constexpr int kUnroll = kBlock == 32 ? 4 : 2;
  extern __shared__ __align__(16) uint8_t int8_shared[];
  __shared__ float partial[kMatvecWarps][kMatrices][kMaxMatvecTokens];
  __shared__ float inverse_rms[kMaxMatvecTokens];
  const int b = blockIdx.x;
  const int which =
      m::matvec_part(b, parts.n, parts.part[1].first_block, parts.part[2].first_block);
  const MatvecPart& mp = which == 2 ? parts.part[2] : which == 1 ? parts.part[1] : parts.part[0];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int sub = lane / kLanes, l = lane % kLanes;  // the block of a pass, the lane in it
  const m::MatvecSplit split{warps_per_row, kMatvecWarps / warps_per_row};
  const int part = m::matvec_row_part(warp, split);
  const int thread_of_row = part * kWarp + lane, threads_per_row = warps_per_row * kWarp;
  const int items = cols / 8;  // four parts of 8 values per chunk
  const int act_blocks = cols / kBlock;
  const int group = min(int8_token_group(cols, kBlock), n_tokens);  // as the launch sized it
  int8_t* xq = reinterpret_cast<int8_t*>(int8_shared);
  float* xd = reinterpret_cast<float*>(int8_shared + size_t(group) * cols);
  // The warp's rows: row0, then a group of the block's rows further at each of the iters.
  const int row0 = (b - mp.first_block) * iters * split.rows_per_block + warp / warps_per_row;
  // The first row's words start travelling to L2 while the activations are quantized.
  if (row0 < mp.rows && thread_of_row < items)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(mp.w + size_t(row0) * mp.row_bytes +
                                                   size_t(thread_of_row) * mp.row_bytes /
                                                       size_t(items)));
  for (int t0 = 0; t0 < n_tokens; t0 += group) {
    const int g = min(group, n_tokens - t0);
    __syncthreads();  // the previous group's activations are no longer read
    if (norm_weight != nullptr) {
      // RMSNorm first (the norm before a projection, folded in): a warp per token, in the
      // order cuda_math::warp_order_sum_squares states.
      for (int t = warp; t < g; t += kMatvecWarps) {
        const float4* x4 = reinterpret_cast<const float4*>(x + size_t(t0 + t) * cols);
        float ss = 0.0f;
#pragma unroll 8
        for (int i = lane; i < cols / 4; i += kWarp) {
          const float4 f = x4[i];
          ss = m::add_squares4(ss, f.x, f.y, f.z, f.w);
        }
        ss = warp_sum(ss);
        if (lane == 0) inverse_rms[t] = m::rms_inv(ss, cols, eps);
      }
      __syncthreads();
    }
    // Each lane quantizes kVals values of a block (float4 loads: a warp reads 512 contiguous
    // bytes at a time), kLanes lanes a block; the loads of kUnroll passes travel together.
    for (int j0 = warp * kBlocksPerPass * kUnroll; j0 < g * act_blocks;
         j0 += kMatvecWarps * kBlocksPerPass * kUnroll) {
      float v[kUnroll][kVals];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int job = j0 + u * kBlocksPerPass + sub;
        if (job >= g * act_blocks) continue;
        const int t = job / act_blocks, blk = job % act_blocks;
        const float* xb = x + size_t(t0 + t) * cols + size_t(blk) * kBlock;
#pragma unroll
        for (int h = 0; h < kVals / 4; ++h) {
          const float4 f = *reinterpret_cast<const float4*>(xb + 4 * (l + kLanes * h));
          v[u][4 * h] = f.x;
          v[u][4 * h + 1] = f.y;
          v[u][4 * h + 2] = f.z;
          v[u][4 * h + 3] = f.w;
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int job = j0 + u * kBlocksPerPass + sub;
        const bool have = job < g * act_blocks;
        const int t = have ? job / act_blocks : 0, blk = have ? job % act_blocks : 0;
        float amax = 0.0f;
#pragma unroll
        for (int e = 0; e < kVals; ++e) {
          if (!have) v[u][e] = 0.0f;
          if (have && norm_weight != nullptr)
            v[u][e] =
                m::rms_normalized(v[u][e], inverse_rms[t],
                                  norm_weight[blk * kBlock + 4 * (l + kLanes * (e / 4)) + e % 4]);
          amax = fmaxf(amax, fabsf(v[u][e]));
        }
        for (int offset = kLanes / 2; offset > 0; offset /= 2)  // within the block's lanes
          amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
        if (!have) continue;
        const float scale = m::q8_scale(amax), inverse = m::q8_inverse(scale);
        int8_t* qb = xq + size_t(t) * cols + size_t(blk) * kBlock;
#pragma unroll
        for (int h = 0; h < kVals / 4; ++h) {
          uint32_t word = 0;
#pragma unroll
          for (int e = 0; e < 4; ++e)
            word |= uint32_t(uint8_t(m::q8_value(v[u][4 * h + e], inverse))) << (8 * e);
          *reinterpret_cast<uint32_t*>(qb + 4 * (l + kLanes * h)) = word;
        }
        if (l == 0) xd[t * act_blocks + blk] = scale;
      }
    }
    __syncthreads();
    for (int k = 0; k < iters; ++k) {
      const int row = row0 + k * split.rows_per_block;
      const bool active = row < mp.rows;
      float sums[kMatrices][kMaxMatvecTokens];
#pragma unroll
      for (int mat = 0; mat < kMatrices; ++mat)
#pragma unroll
        for (int t = 0; t < kMaxMatvecTokens; ++t) sums[mat][t] = 0.0f;
      if (active) {
        const uint8_t* rows_of[kMatrices];
#pragma unroll
        for (int mat = 0; mat < kMatrices; ++mat)
          rows_of[mat] = (mat == 0 ? mp.w : mp.w_up) + size_t(row) * mp.row_bytes;
#pragma unroll 2
        for (int i = thread_of_row; i < items; i += threads_per_row) {
          const int c = i / 4, p = i % 4;
          m::WeightPart wp[kMatrices];
#pragma unroll
          for (int mat = 0; mat < kMatrices; ++mat) wp[mat] = q8_weights<T>(rows_of[mat], c, p);
#pragma unroll
          for (int t = 0; t < kMaxMatvecTokens; ++t) {
            if (t >= g) break;
            const int8_t* qc = xq + size_t(t) * cols + size_t(c) * m::kChunk;
            const m::Q8Part xp{*reinterpret_cast<const int*>(qc + 4 * p),
                               *reinterpret_cast<const int*>(qc + 16 + 4 * p),
                               xd[t * act_blocks + c * m::kChunk / kBlock]};
#pragma unroll
            for (int mat = 0; mat < kMatrices; ++mat)
              sums[mat][t] += m::q8_part_dot<m::q8_has_min(T)>(wp[mat], xp);
          }
        }
      }
      finish_rows<kGlu>(sums, partial, g, active && part == 0, warps_per_row, mp, row, t0,
                        accumulate);
      __syncthreads();  // `partial` is read before the next rows write it
    }
  }
}

// float, or uint16_t for fp16 bits.
template <GgmlType T, typename Out>
__global__ void dequantize_rows_kernel(const uint8_t* w, size_t row_bytes, int row0, int n_rows,
                                       int cols, Out* out) {
  const size_t n = size_t(n_rows) * cols;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int r = int(i / cols), c = int(i % cols);
    const float v = dequant<T>(w + size_t(row0 + r) * row_bytes, c);
    if constexpr (sizeof(Out) == 2)
      out[i] = m::float_to_half(v);
    else
      out[i] = v;
  }
}

// The same for rows made of whole chunks (every quantized type; float rows of a multiple of 32
// values): one thread per chunk of 32 values, dequantized as the mat-vec kernel does it and
// stored 16 bytes at a time, instead of a division and a block lookup per value.
template <GgmlType T, typename Out>
__global__ void dequantize_chunks_kernel(const uint8_t* w, size_t row_bytes, int row0,
                                         unsigned n_chunks, unsigned chunks_per_row, Out* out) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n_chunks;
       i += gridDim.x * blockDim.x) {
    const unsigned r = i / chunks_per_row, c = i - r * chunks_per_row;
    float v[m::kChunk];
    dequant_chunk<T>(w + size_t(row0 + int(r)) * row_bytes, int(c), v);
    if constexpr (sizeof(Out) == 2) {
      uint4* dst = reinterpret_cast<uint4*>(out + size_t(i) * m::kChunk);
#pragma unroll
      for (int q = 0; q < m::kChunk / 8; ++q) {
        uint32_t h[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          h[j] = uint32_t(m::float_to_half(v[8 * q + 2 * j])) |
                 (uint32_t(m::float_to_half(v[8 * q + 2 * j + 1])) << 16);
        dst[q] = make_uint4(h[0], h[1], h[2], h[3]);
      }
    } else {
      float4* dst = reinterpret_cast<float4*>(out + size_t(i) * m::kChunk);
#pragma unroll
      for (int q = 0; q < m::kChunk / 4; ++q)
        dst[q] = make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
    }
  }
}

__global__ void round_to_f16_kernel(const float* __restrict__ x, size_t n,
                                    uint16_t* __restrict__ out) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = m::float_to_half_saturated(x[i]);
}

template <GgmlType T>
__global__ void embed_kernel(const uint8_t* __restrict__ table, size_t row_bytes, int cols,
                             const int32_t* __restrict__ tokens, float* __restrict__ x) {
  const int t = blockIdx.x;
  const uint8_t* row = table + size_t(tokens[t]) * row_bytes;
#pragma unroll 4
  for (int e = threadIdx.x; e < cols; e += blockDim.x) x[size_t(t) * cols + e] = dequant<T>(row, e);
}

// Calls f(std::integral_constant-like tag) with the weight type as a template argument.
template <typename F>
void with_type(uint32_t type, F&& f) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::F32:
      return f.template operator()<GgmlType::F32>();
    case GgmlType::F16:
      return f.template operator()<GgmlType::F16>();
    case GgmlType::BF16:
      return f.template operator()<GgmlType::BF16>();
    case GgmlType::Q8_0:
      return f.template operator()<GgmlType::Q8_0>();
    case GgmlType::Q4_0:
      return f.template operator()<GgmlType::Q4_0>();
    case GgmlType::Q4_1:
      return f.template operator()<GgmlType::Q4_1>();
    case GgmlType::Q5_0:
      return f.template operator()<GgmlType::Q5_0>();
    case GgmlType::Q5_1:
      return f.template operator()<GgmlType::Q5_1>();
    case GgmlType::IQ4_NL:
      return f.template operator()<GgmlType::IQ4_NL>();
    case GgmlType::IQ4_XS:
      return f.template operator()<GgmlType::IQ4_XS>();
    case GgmlType::Q4_K:
      return f.template operator()<GgmlType::Q4_K>();
    case GgmlType::Q5_K:
      return f.template operator()<GgmlType::Q5_K>();
    case GgmlType::Q6_K:
      return f.template operator()<GgmlType::Q6_K>();
    default:
      return;  // excluded at upload (kernels_read_type)
  }
}

// One block per row; the sum of squares is reduced over the block. Rows of up to
// kNormPerThread values per thread are read once, all loads in flight together, and kept in
// registers; longer rows are read twice. Either way thread i sums values i, i + blockDim.x, ...
// in that order.
constexpr int kNormPerThread = 8;

__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ weight, int n,
                               float eps, float* __restrict__ out) {
  const float* xr = x + size_t(blockIdx.x) * n;
  float* o = out + size_t(blockIdx.x) * n;
  const int stride = blockDim.x;
  if (n <= kNormPerThread * stride) {
    float v[kNormPerThread], g[kNormPerThread];
#pragma unroll
    for (int j = 0; j < kNormPerThread; ++j) {
      const int i = threadIdx.x + j * stride;
      v[j] = i < n ? xr[i] : 0.0f;
      g[j] = i < n ? weight[i] : 0.0f;
    }
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < kNormPerThread; ++j) ss += v[j] * v[j];
    const float inv = m::rms_inv(block_sum(ss), n, eps);
#pragma unroll
    for (int j = 0; j < kNormPerThread; ++j) {
      const int i = threadIdx.x + j * stride;
      if (i < n) o[i] = v[j] * inv * g[j];
    }
    return;
  }
  float ss = 0.0f;
  for (int i = threadIdx.x; i < n; i += stride) ss += xr[i] * xr[i];
  const float inv = m::rms_inv(block_sum(ss), n, eps);
  for (int i = threadIdx.x; i < n; i += stride) o[i] = xr[i] * inv * weight[i];
}

// Lane 0's `best` becomes the winner of the warp's lanes.
__device__ __forceinline__ void warp_argmax(m::ArgmaxState& best) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float v = __shfl_down_sync(0xffffffffu, best.value, offset);
    const int32_t i = __shfl_down_sync(0xffffffffu, best.index, offset);
    m::argmax_push(best, v, i);
  }
}

// A row of logits is split into `parts` ranges of `part_len` values (one, for a short row), one
// block each: each thread scans a stride of its range, then the block reduces the threads'
// winners (cuda_math::argmax_push decides every comparison). With one part the block writes the
// row's token; with several, its range's winner to partial[row * parts + part], which
// argmax_combine_kernel reduces: a vocabulary of 151,936 values is read by about 75 SMs instead
// of one. The scan reads kArgmaxBatch values per thread before comparing any, so that many loads
// are in flight. The winner does not depend on the order of the comparisons, nor on the split.
constexpr int kArgmaxBatch = 8;
constexpr int kArgmaxPartThreads = 256;
constexpr int kArgmaxPartLen = kArgmaxBatch * kArgmaxPartThreads;
constexpr int kArgmaxMaxParts = 128;

__global__ void argmax_rows_kernel(const float* __restrict__ logits, int n, int part_len,
                                   int parts, m::ArgmaxState* __restrict__ partial,
                                   int32_t* __restrict__ out) {
  const int r = blockIdx.x / parts, p = blockIdx.x % parts;
  const float* row = logits + size_t(r) * n;
  const int begin = p * part_len, end = min(n, begin + part_len);
  m::ArgmaxState best = m::argmax_start();
  const int stride = blockDim.x;
  for (int i0 = begin + int(threadIdx.x); i0 < end; i0 += kArgmaxBatch * stride) {
    float v[kArgmaxBatch];
#pragma unroll
    for (int u = 0; u < kArgmaxBatch; ++u) {
      const int i = i0 + u * stride;
      v[u] = i < end ? row[i] : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < kArgmaxBatch; ++u)
      if (i0 + u * stride < end) m::argmax_push(best, v[u], i0 + u * stride);
  }
  warp_argmax(best);
  __shared__ float values[32];
  __shared__ int32_t indices[32];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) {
    values[warp] = best.value;
    indices[warp] = best.index;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    m::ArgmaxState total = m::argmax_start();
    for (int w = 0; w < int(blockDim.x / kWarp); ++w) m::argmax_push(total, values[w], indices[w]);
    if (parts == 1)
      out[r] = m::argmax_index(total);
    else
      partial[blockIdx.x] = total;
  }
}

// One warp per row: the winner of the row's parts.
__global__ void argmax_combine_kernel(const m::ArgmaxState* __restrict__ partial, int parts,
                                      int32_t* __restrict__ out) {
  const m::ArgmaxState* row = partial + size_t(blockIdx.x) * parts;
  m::ArgmaxState best = m::argmax_start();
  for (int p = threadIdx.x; p < parts; p += kWarp) m::argmax_push(best, row[p].value, row[p].index);
  warp_argmax(best);
  if (threadIdx.x == 0) out[blockIdx.x] = m::argmax_index(best);
}

__global__ void add_bias_kernel(float* y, const float* bias, int n_rows, int n) {
  const size_t total = size_t(n_rows) * n;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] += bias[i % n];
}

__global__ void add_kernel(float* x, const float* y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    x[i] += y[i];
}

__global__ void swiglu_kernel(float* gate, const float* up, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    gate[i] = m::swiglu(gate[i], up[i]);
}

__device__ __forceinline__ size_t kv_row_offset(const KvLayout& kv, const int32_t* blocks,
                                                int layer, int pos) {
  return size_t(blocks[pos / 16]) * kv.block_elems + size_t(layer) * 2 * 16 * kv.kv_dim +
         size_t(pos % 16) * kv.kv_dim;
}

// One block per token: the threads walk the (head, pair) list of q's heads, then k's, rotating
// each pair; then they store the token's rotated keys and its values in the KV blocks.
__global__ void rope_store_kv_kernel(float* q, float* k, const float* v, const int32_t* start_pos,
                                     RopeParams p, KvLayout kv, int layer, const int32_t* blocks) {
  const int t = blockIdx.x, pos = *start_pos + t, half = p.head_dim / 2;
  const int q_pairs = p.n_head * half, total = (p.n_head + p.n_head_kv) * half;
  for (int j = threadIdx.x; j < total; j += blockDim.x) {
    const bool is_q = j < q_pairs;
    const int jj = is_q ? j : j - q_pairs;
    const int head = jj / half, i = jj % half;
    float* x = is_q ? q + (size_t(t) * p.n_head + head) * p.head_dim
                    : k + (size_t(t) * p.n_head_kv + head) * p.head_dim;
    int a, b;
    m::rope_pair_index(i, p.head_dim, p.neox, a, b);
    m::rope_rotate(x[a], x[b], m::rope_angle(pos, i, p.head_dim, p.theta_base, p.freq_scale));
  }
  __syncthreads();
  uint16_t* keys = kv.base + kv_row_offset(kv, blocks, layer, pos);
  uint16_t* values = keys + size_t(16) * kv.kv_dim;
  for (int i = threadIdx.x; i < kv.kv_dim; i += blockDim.x) {
    keys[i] = __half_as_ushort(__float2half_rn(k[size_t(t) * kv.kv_dim + i]));
    values[i] = __half_as_ushort(__float2half_rn(v[size_t(t) * kv.kv_dim + i]));
  }
}

constexpr int kAttentionWarps = 4;
constexpr int kDimsPerLane = kMaxHeadDim / kWarp;

// One block per (query head, token). Each warp takes every kAttentionWarps-th key: the lanes
// split the head's dimensions, reduce the dot product, and keep a streaming softmax with the
// weighted sum of values; the warps' partial results are merged at the end.
__global__ void attention_kernel(KvLayout kv, int layer, const int32_t* blocks,
                                 const int32_t* start_pos, const float* q, int n_head,
                                 int n_head_kv, int head_dim, float* out) {
  const int h = blockIdx.x, t = blockIdx.y, pos = *start_pos + t;
  const int kvh = h / (n_head / n_head_kv);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const float* qh = q + (size_t(t) * n_head + h) * head_dim;
  const float inv_sqrt_d = rsqrtf(float(head_dim));

  float qv[kDimsPerLane], acc[kDimsPerLane];
#pragma unroll
  for (int j = 0; j < kDimsPerLane; ++j) {
    const int i = lane + kWarp * j;
    qv[j] = i < head_dim ? qh[i] : 0.0f;
    acc[j] = 0.0f;
  }
  m::SoftmaxState state;
  for (int p = warp; p <= pos; p += kAttentionWarps) {
    const uint16_t* key = kv.base + kv_row_offset(kv, blocks, layer, p) + size_t(kvh) * head_dim;
    const uint16_t* value = key + size_t(16) * kv.kv_dim;
    float dot = 0.0f;
#pragma unroll
    for (int j = 0; j < kDimsPerLane; ++j) {
      const int i = lane + kWarp * j;
      if (i < head_dim) dot += qv[j] * __half2float(__ushort_as_half(key[i]));
    }
    float rescale, weight;
    m::softmax_push(state, warp_sum(dot) * inv_sqrt_d, rescale, weight);
#pragma unroll
    for (int j = 0; j < kDimsPerLane; ++j) {
      const int i = lane + kWarp * j;
      const float vi = i < head_dim ? __half2float(__ushort_as_half(value[i])) : 0.0f;
      acc[j] = acc[j] * rescale + weight * vi;
    }
  }

  // Plain floats: shared memory takes no constructors.
  __shared__ float state_max[kAttentionWarps], state_sum[kAttentionWarps];
  __shared__ float partial[kAttentionWarps][kMaxHeadDim];
  if (lane == 0) {
    state_max[warp] = state.max;
    state_sum[warp] = state.sum;
  }
#pragma unroll
  for (int j = 0; j < kDimsPerLane; ++j) partial[warp][lane + kWarp * j] = acc[j];
  __syncthreads();
  if (warp != 0) return;
  m::SoftmaxState total = state;  // warp 0's own
  for (int w = 1; w < kAttentionWarps; ++w) {
    m::SoftmaxState other;
    other.max = state_max[w];
    other.sum = state_sum[w];
    float scale_a, scale_b;
    m::softmax_merge(total, other, scale_a, scale_b);
#pragma unroll
    for (int j = 0; j < kDimsPerLane; ++j)
      acc[j] = acc[j] * scale_a + partial[w][lane + kWarp * j] * scale_b;
  }
  float* o = out + (size_t(t) * n_head + h) * head_dim;
#pragma unroll
  for (int j = 0; j < kDimsPerLane; ++j) {
    const int i = lane + kWarp * j;
    if (i < head_dim) o[i] = acc[j] / total.sum;
  }
}

// Decode and verification attention, split over the context (flash-decoding). The context of a
// token is cut into splits of kSplitKeys positions; split s goes to worker s % kAttnWorkers, one
// block per (KV head, token, worker), which serves every query head that shares the KV head:
// each split's keys and values are read into shared memory once, each lane scores one key for
// a query head (32 keys in flight per warp), and the lanes then split the head's dimensions to
// weigh the values. A worker keeps a streaming softmax over its splits and writes (max, sum,
// weighted values); the combine kernel merges the workers in order. Which worker takes which
// positions depends only on the token's position, so a token gets the same bits alone or in a
// batch.
constexpr int kSplitKeys = kWarp;
constexpr int kAttnWorkers = 64;
constexpr int kSplitWarps = 4;
constexpr int kMaxGroupHeads = 16;
constexpr int kHeadsPerWarp = kMaxGroupHeads / kSplitWarps;
constexpr size_t kMaxSplitSharedBytes = 48 * 1024;

size_t split_shared_bytes(int group, int head_dim) {
  return size_t(kSplitKeys) * (head_dim / 2 + 1) * 4  // keys, rows padded by a word
         + size_t(kSplitKeys) * head_dim * 2          // values
         + size_t(group) * head_dim * 4;              // the group's queries
}

__global__ void __launch_bounds__(kSplitWarps* kWarp)
    attention_split_kernel(KvLayout kv, int layer, const int32_t* blocks, const int32_t* start_pos,
                           int token0, const float* q, int n_head, int n_head_kv, int head_dim,
                           float* partial) {
  const int kvh = blockIdx.x, t = blockIdx.y, worker = blockIdx.z;
  const int pos = *start_pos + token0 + t, n_splits = pos / kSplitKeys + 1;
  if (worker >= n_splits) return;  // no split for this worker: the combine does not read it
  const int group = n_head / n_head_kv, half_dim = head_dim / 2, key_stride = half_dim + 1;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  extern __shared__ uint32_t shared[];
  uint32_t* keys = shared;                            // kSplitKeys x key_stride half pairs
  uint32_t* values = keys + kSplitKeys * key_stride;  // kSplitKeys x half_dim half pairs
  float* queries = reinterpret_cast<float*>(values + kSplitKeys * half_dim);
  // Shared memory is filled by asynchronous copies (cp.async): all of a thread's words are in
  // flight at once, none held in registers.
  const float* group_q = q + (size_t(t) * n_head + size_t(kvh) * group) * head_dim;
  for (int i = threadIdx.x; i < group * head_dim; i += blockDim.x)
    __pipeline_memcpy_async(queries + i, group_q + i, sizeof(float));
  __pipeline_commit();
  const float inv_sqrt_d = rsqrtf(float(head_dim));

  float acc[kHeadsPerWarp][kDimsPerLane], run_max[kHeadsPerWarp], run_sum[kHeadsPerWarp];
#pragma unroll
  for (int hh = 0; hh < kHeadsPerWarp; ++hh) {
    run_max[hh] = -INFINITY;
    run_sum[hh] = 0.0f;
#pragma unroll
    for (int j = 0; j < kDimsPerLane; ++j) acc[hh][j] = 0.0f;
  }
  for (int split = worker; split < n_splits; split += kAttnWorkers) {
    const int p0 = split * kSplitKeys, n_keys = min(kSplitKeys, pos + 1 - p0);
    __syncthreads();  // the previous split is read
    for (int i = threadIdx.x; i < n_keys * half_dim; i += blockDim.x) {
      const int j = i / half_dim, w = i % half_dim;
      const uint16_t* key =
          kv.base + kv_row_offset(kv, blocks, layer, p0 + j) + size_t(kvh) * head_dim;
      __pipeline_memcpy_async(&keys[j * key_stride + w], key + 2 * w, sizeof(uint32_t));
      __pipeline_memcpy_async(&values[j * half_dim + w], key + size_t(16) * kv.kv_dim + 2 * w,
                              sizeof(uint32_t));
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);  // this thread's copies (the queries' too); the barrier: everyone's
    __syncthreads();
#pragma unroll
    for (int hh = 0; hh < kHeadsPerWarp; ++hh) {
      const int g = warp + kSplitWarps * hh;
      if (g >= group) continue;  // the same for the whole warp
      const float* qh = queries + g * head_dim;
      float score = -INFINITY;
      if (lane < n_keys) {
        float dot = 0.0f;
        for (int w = 0; w < half_dim; ++w) {
          const __half2 pair = *reinterpret_cast<const __half2*>(&keys[lane * key_stride + w]);
          const float2 f = __half22float2(pair);
          dot += qh[2 * w] * f.x + qh[2 * w + 1] * f.y;
        }
        score = dot * inv_sqrt_d;
      }
      const float new_max = fmaxf(run_max[hh], warp_max(score));
      const float p = lane < n_keys ? expf(score - new_max) : 0.0f;
      const float rescale = run_max[hh] == -INFINITY ? 0.0f : expf(run_max[hh] - new_max);
      run_sum[hh] = run_sum[hh] * rescale + warp_sum(p);
      run_max[hh] = new_max;
#pragma unroll
      for (int j = 0; j < kDimsPerLane; ++j) acc[hh][j] *= rescale;
      const uint16_t* vh = reinterpret_cast<const uint16_t*>(values);
      for (int key = 0; key < n_keys; ++key) {
        const float pk = __shfl_sync(0xffffffffu, p, key);
#pragma unroll
        for (int j = 0; j < kDimsPerLane; ++j) {
          const int d = lane + kWarp * j;
          if (d < head_dim)
            acc[hh][j] += pk * __half2float(__ushort_as_half(vh[key * head_dim + d]));
        }
      }
    }
  }
#pragma unroll
  for (int hh = 0; hh < kHeadsPerWarp; ++hh) {
    const int g = warp + kSplitWarps * hh;
    if (g >= group) continue;
    const int h = kvh * group + g;
    float* o = partial + ((size_t(t) * n_head + h) * kAttnWorkers + worker) * (head_dim + 2);
    if (lane == 0) {
      o[0] = run_max[hh];
      o[1] = run_sum[hh];
    }
#pragma unroll
    for (int j = 0; j < kDimsPerLane; ++j) {
      const int d = lane + kWarp * j;
      if (d < head_dim) o[2 + d] = acc[hh][j];
    }
  }
}

// out = the workers' weighted values merged in worker order, over their merged softmax sums.
__global__ void attention_combine_kernel(const float* partial, const int32_t* start_pos, int token0,
                                         int n_head, int head_dim, float* out) {
  const int h = blockIdx.x, t = blockIdx.y;
  const int n_splits = (*start_pos + token0 + t) / kSplitKeys + 1;
  const int workers = min(kAttnWorkers, n_splits);  // each of these took a split at least
  const size_t stride = size_t(head_dim) + 2;
  const float* base = partial + (size_t(t) * n_head + h) * kAttnWorkers * stride;
  float total_max = -INFINITY;
  for (int w = 0; w < workers; ++w) total_max = fmaxf(total_max, base[w * stride]);
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float num = 0.0f, den = 0.0f;
    for (int w = 0; w < workers; ++w) {
      const float* pw = base + w * stride;
      const float f = expf(pw[0] - total_max);
      den += f * pw[1];
      num += f * pw[2 + d];
    }
    out[(size_t(t) * n_head + h) * head_dim + d] = num / den;
  }
}

int grid_for(size_t n, int threads) {
  const size_t blocks = (n + threads - 1) / threads;
  return int(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

}  // namespace

bool kernels_read_type(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q8_0:
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

namespace {

MatvecKernel selected_kernel = MatvecKernel::Blocks;

// Blocks of the rows kernel resident on one SM (from its registers and shared memory), once
// per instantiation: its launch covers the GPU once, each warp taking several rows.
template <GgmlType T, bool kGlu>
int rows_blocks_per_sm() {
  static const int blocks = [] {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, matvec_rows_kernel<T, kGlu>,
                                                      kMatvecWarps * kWarp, 0) != cudaSuccess)
      n = 1;
    return n > 0 ? n : 1;
  }();
  return blocks;
}

int sm_count() {
  static const int n = [] {
    int device = 0, count = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
    return count > 0 ? count : 1;
  }();
  return n;
}

// The parts of a launch over targets[0..n), blocks of `rows_per_block` rows dealt to them in
// order; `blocks` is set to the launch's blocks.
MatvecParts matvec_parts(const MatvecTarget* targets, int n, const uint8_t* w_up,
                         int rows_per_block, int& blocks) {
  MatvecParts parts{};
  parts.n = n;
  blocks = 0;
  for (int i = 0; i < n; ++i) {
    const DeviceMatrix& w = *targets[i].w;
    parts.part[i] = MatvecPart{.w = w.data,
                               .w_up = w_up,
                               .row_bytes = w.row_bytes,
                               .rows = w.rows,
                               .y = targets[i].y,
                               .bias = targets[i].bias,
                               .first_block = blocks};
    blocks += m::matvec_blocks(w.rows, rows_per_block);
  }
  return parts;
}

// Warps of the int8 kernel per row: enough that a thread has at most four parts of a row.
int int8_warps_per_row(int cols) {
  int w = 1;
  while (w < kMatvecWarps && cols / 8 > w * kWarp * 4) w *= 2;
  return w;
}

// The int8 kernel's launch over targets[0..n) as matvec_launch below (of one type, that
// int8_reads), with the RMSNorm of x by `norm_weight` folded in where it is given.
template <bool kGlu>
void int8_launch(const MatvecTarget* targets, int n, const uint8_t* w_up, const float* x,
                 int n_tokens, bool accumulate, cudaStream_t s,
                 const float* norm_weight = nullptr, float eps = 0.0f) {
  constexpr int kBlocksWanted = 2048;  // beyond this, a block takes several groups of rows
  const int cols = targets[0].w->cols;
  const int warps_per_row = int8_warps_per_row(cols);
  const int rows_per_block = kMatvecWarps / warps_per_row;
  int one_each = 0;
  for (int i = 0; i < n; ++i) one_each += m::matvec_blocks(targets[i].w->rows, rows_per_block);
  const int iters = std::max(1, one_each / kBlocksWanted);
  int blocks = 0;
  const MatvecParts parts = matvec_parts(targets, n, w_up, rows_per_block * iters, blocks);
  with_type(targets[0].w->type, [&]<GgmlType T>() {
    constexpr int kBlock = m::q8_activation_block(T);
    if constexpr (kBlock > 0) {
      const int group = std::min(int8_token_group(cols, kBlock), n_tokens);
      const size_t shared = size_t(group) * size_t(int8_activation_bytes(cols, kBlock));
      matvec_int8_kernel<T, kGlu, kBlock><<<blocks, kMatvecWarps * kWarp, shared, s>>>(
          parts, cols, x, n_tokens, accumulate, warps_per_row, iters, norm_weight, eps);
    }
  });
}

// Calls launch(first, count) for each run of consecutive targets of one type, kMaxMatvecParts
// at most: the targets one launch serves.
template <typename F>
void each_type_run(const MatvecTarget* targets, int n, F&& launch) {
  for (int i = 0; i < n;) {
    int j = i + 1;
    while (j < n && j - i < kMaxMatvecParts && targets[j].w->type == targets[i].w->type) ++j;
    launch(targets + i, j - i);
    i = j;
  }
}

}  // namespace

bool int8_reads(const DeviceMatrix& w) {
  if (selected_kernel != MatvecKernel::Int8) return false;
  const int block = m::q8_activation_block(static_cast<GgmlType>(w.type));
  return block > 0 && w.cols % block == 0 && int8_token_group(w.cols, block) >= 1;
}

namespace {

// Queues one mat-vec launch over targets[0..n) (n <= kMaxMatvecParts), which share the type
// and columns of the first; with kGlu, one target whose rows are multiplied by `w_up`'s too.
template <bool kGlu>
void matvec_launch(const MatvecTarget* targets, int n, const uint8_t* w_up, const float* x,
                   int n_tokens, bool accumulate, cudaStream_t s) {
  const DeviceMatrix& first = *targets[0].w;
  if (int8_reads(first)) {
    int8_launch<kGlu>(targets, n, w_up, x, n_tokens, accumulate, s);
    return;
  }
  const m::MatvecSplit split = m::matvec_split(m::matvec_segments(first.cols), kMatvecWarps);
  int blocks = 0;
  const MatvecParts parts = matvec_parts(targets, n, w_up, split.rows_per_block, blocks);
  with_type(first.type, [&]<GgmlType T>() {
    if constexpr (rows_depth<T, kGlu>() >= 2) {
      if (selected_kernel == MatvecKernel::Rows && n_tokens == 1 && first.cols % m::kChunk == 0) {
        int rows = 0;
        for (int i = 0; i < n; ++i) rows += parts.part[i].rows;
        const int grid = std::min(m::matvec_blocks(rows, kMatvecWarps),
                                  sm_count() * rows_blocks_per_sm<T, kGlu>());
        matvec_rows_kernel<T, kGlu><<<grid, kMatvecWarps * kWarp, 0, s>>>(
            parts, first.cols, x, accumulate, split.warps_per_row);
        return;
      }
    }
    matvec_kernel<T, kGlu><<<blocks, kMatvecWarps * kWarp, 0, s>>>(
        parts, first.cols, x, n_tokens, accumulate, split.warps_per_row);
  });
}

}  // namespace

void select_matvec_kernel(MatvecKernel k) {
  selected_kernel = k;
  if (k != MatvecKernel::Rows) return;
  // The launch sizes are read here, outside any stream capture: a step graph captures the first
  // launches.
  sm_count();
  for (uint32_t type = 0; type < 64; ++type) {
    if (!kernels_read_type(type)) continue;
    with_type(type, [&]<GgmlType T>() {
      if constexpr (rows_depth<T, false>() >= 2) rows_blocks_per_sm<T, false>();
      if constexpr (rows_depth<T, true>() >= 2) rows_blocks_per_sm<T, true>();
    });
  }
}
MatvecKernel selected_matvec_kernel() { return selected_kernel; }

void matvec(const DeviceMatrix& w, const float* x, int n_tokens, float* y, bool accumulate,
            const float* bias, cudaStream_t s) {
  const MatvecTarget target{.w = &w, .y = y, .bias = bias};
  matvec_launch<false>(&target, 1, nullptr, x, n_tokens, accumulate, s);
}

bool matvec_shared_input(const MatvecTarget* targets, int n, const float* x, int n_tokens,
                         cudaStream_t s) {
  for (int i = 1; i < n; ++i)
    if (targets[i].w->cols != targets[0].w->cols) return false;
  each_type_run(targets, n, [&](const MatvecTarget* run, int count) {
    matvec_launch<false>(run, count, nullptr, x, n_tokens, /*accumulate=*/false, s);
  });
  return true;
}

bool matvec_shared_input_normed(const MatvecTarget* targets, int n, const float* x,
                                const float* norm_weight, float eps, int n_tokens,
                                cudaStream_t s) {
  for (int i = 0; i < n; ++i)
    if (targets[i].w->cols != targets[0].w->cols || !int8_reads(*targets[i].w)) return false;
  each_type_run(targets, n, [&](const MatvecTarget* run, int count) {
    int8_launch<false>(run, count, nullptr, x, n_tokens, /*accumulate=*/false, s, norm_weight,
                       eps);
  });
  return true;
}

bool matvec_swiglu_normed(const DeviceMatrix& gate, const DeviceMatrix& up, const float* x,
                          const float* norm_weight, float eps, int n_tokens, float* y,
                          cudaStream_t s) {
  if (gate.type != up.type || gate.rows != up.rows || gate.cols != up.cols ||
      gate.row_bytes != up.row_bytes || !int8_reads(gate))
    return false;
  const MatvecTarget target{.w = &gate, .y = y, .bias = nullptr};
  int8_launch<true>(&target, 1, up.data, x, n_tokens, /*accumulate=*/false, s, norm_weight, eps);
  return true;
}

bool matvec_swiglu(const DeviceMatrix& gate, const DeviceMatrix& up, const float* x, int n_tokens,
                   float* y, cudaStream_t s) {
  if (gate.type != up.type || gate.rows != up.rows || gate.cols != up.cols ||
      gate.row_bytes != up.row_bytes)
    return false;
  const MatvecTarget target{.w = &gate, .y = y, .bias = nullptr};
  matvec_launch<true>(&target, 1, up.data, x, n_tokens, /*accumulate=*/false, s);
  return true;
}

template <typename Out>
void dequantize_rows_as(const DeviceMatrix& w, int row0, int n_rows, Out* out, cudaStream_t s) {
  const int threads = 256;
  const size_t n_chunks = size_t(n_rows) * (w.cols / m::kChunk);
  // By chunks where rows are made of them and the output's chunks are 16-byte aligned.
  if (w.cols % m::kChunk == 0 && n_chunks <= UINT32_MAX &&
      reinterpret_cast<uintptr_t>(out) % 16 == 0) {
    with_type(w.type, [&]<GgmlType T>() {
      dequantize_chunks_kernel<T><<<grid_for(n_chunks, threads), threads, 0, s>>>(
          w.data, w.row_bytes, row0, unsigned(n_chunks), unsigned(w.cols / m::kChunk), out);
    });
    return;
  }
  with_type(w.type, [&]<GgmlType T>() {
    dequantize_rows_kernel<T><<<grid_for(size_t(n_rows) * w.cols, threads), threads, 0, s>>>(
        w.data, w.row_bytes, row0, n_rows, w.cols, out);
  });
}

void dequantize_rows(const DeviceMatrix& w, int row0, int n_rows, float* out, cudaStream_t s) {
  dequantize_rows_as(w, row0, n_rows, out, s);
}

void dequantize_rows_f16(const DeviceMatrix& w, int row0, int n_rows, uint16_t* out,
                         cudaStream_t s) {
  dequantize_rows_as(w, row0, n_rows, out, s);
}

void round_to_f16(const float* x, size_t n, uint16_t* out, cudaStream_t s) {
  if (n == 0) return;
  round_to_f16_kernel<<<grid_for(n, 256), 256, 0, s>>>(x, n, out);
}

void embed(const DeviceMatrix& table, const int32_t* tokens, int n_tokens, float* x,
           cudaStream_t s) {
  with_type(table.type, [&]<GgmlType T>() {
    embed_kernel<T><<<n_tokens, 256, 0, s>>>(table.data, table.row_bytes, table.cols, tokens, x);
  });
}

void rmsnorm(const float* x, const float* weight, int n_rows, int n, float eps, float* out,
             cudaStream_t s) {
  rmsnorm_kernel<<<n_rows, 256, 0, s>>>(x, weight, n, eps, out);
}

namespace {
int argmax_parts(int n) {
  if (n <= 2 * kArgmaxPartLen) return 1;
  return std::min(kArgmaxMaxParts, (n + kArgmaxPartLen - 1) / kArgmaxPartLen);
}
}  // namespace

size_t argmax_scratch_bytes(int n_rows, int n) {
  const int parts = argmax_parts(n);
  return parts > 1 ? size_t(n_rows) * parts * sizeof(m::ArgmaxState) : 0;
}

void argmax_rows(const float* logits, int n_rows, int n, void* scratch, int32_t* out,
                 cudaStream_t s) {
  const int parts = argmax_parts(n);
  if (parts == 1) {
    argmax_rows_kernel<<<n_rows, 1024, 0, s>>>(logits, n, n, 1, nullptr, out);
    return;
  }
  const int part_len = (n + parts - 1) / parts;
  auto* partial = static_cast<m::ArgmaxState*>(scratch);
  argmax_rows_kernel<<<n_rows * parts, kArgmaxPartThreads, 0, s>>>(logits, n, part_len, parts,
                                                                  partial, out);
  argmax_combine_kernel<<<n_rows, kWarp, 0, s>>>(partial, parts, out);
}

void add_bias(float* y, const float* bias, int n_rows, int n, cudaStream_t s) {
  add_bias_kernel<<<grid_for(size_t(n_rows) * n, 256), 256, 0, s>>>(y, bias, n_rows, n);
}

void add_in_place(float* x, const float* y, size_t n, cudaStream_t s) {
  add_kernel<<<grid_for(n, 256), 256, 0, s>>>(x, y, n);
}

void swiglu(float* gate, const float* up, size_t n, cudaStream_t s) {
  swiglu_kernel<<<grid_for(n, 256), 256, 0, s>>>(gate, up, n);
}

void rope_store_kv(float* q, float* k, const float* v, int n_tokens, const int32_t* start_pos,
                   const RopeParams& p, const KvLayout& kv, int layer, const int32_t* blocks,
                   cudaStream_t s) {
  // A thread per rotated pair (up to 1,024): the pairs' loads are all in flight at once.
  const int pairs = (p.n_head + p.n_head_kv) * (p.head_dim / 2);
  const int threads = std::min(1024, std::max(128, (pairs + kWarp - 1) / kWarp * kWarp));
  rope_store_kv_kernel<<<n_tokens, threads, 0, s>>>(q, k, v, start_pos, p, kv, layer, blocks);
}

size_t attention_scratch_floats(int n_head, int head_dim) {
  return size_t(kMaxMatvecTokens) * n_head * kAttnWorkers * (size_t(head_dim) + 2);
}

void attention(const KvLayout& kv, int layer, const int32_t* blocks, const int32_t* start_pos,
               int n_tokens, const float* q, int n_head, int n_head_kv, int head_dim,
               float* scratch, float* out, cudaStream_t s, bool split_any_batch) {
  const int group = n_head / n_head_kv;
  const size_t shared = split_shared_bytes(group, head_dim);
  if (scratch && (n_tokens <= kMaxMatvecTokens || split_any_batch) && group <= kMaxGroupHeads &&
      shared <= kMaxSplitSharedBytes) {
    // kMaxMatvecTokens tokens at a time: the scratch holds their partial results.
    for (int t0 = 0; t0 < n_tokens; t0 += kMaxMatvecTokens) {
      const int n = std::min(kMaxMatvecTokens, n_tokens - t0);
      const size_t at = size_t(t0) * n_head * head_dim;
      attention_split_kernel<<<dim3(n_head_kv, n, kAttnWorkers), kSplitWarps * kWarp, shared,
                               s>>>(kv, layer, blocks, start_pos, t0, q + at, n_head, n_head_kv,
                                    head_dim, scratch);
      attention_combine_kernel<<<dim3(n_head, n), 64, 0, s>>>(scratch, start_pos, t0, n_head,
                                                              head_dim, out + at);
    }
    return;
  }
  attention_kernel<<<dim3(n_head, n_tokens), kAttentionWarps * kWarp, 0, s>>>(
      kv, layer, blocks, start_pos, q, n_head, n_head_kv, head_dim, out);
}

}  // namespace ghostline::engine::cuda
