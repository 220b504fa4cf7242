// Kernel launchers of the CUDA backend. Every launch goes on the caller's stream; the math of
// each element is in cuda_math.h (tested on the host). Plain kernels, one concern each.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ghostline::engine::cuda {

// Tokens the mat-vec kernel computes against one read of the weights. Each token's sum is
// computed in the same order whatever the count, so a batch of up to this many tokens gives the
// logits of single steps bit for bit (speculative verification relies on it).
inline constexpr int kMaxMatvecTokens = 8;
inline constexpr int kMaxHeadDim = 256;

// A weight matrix in device memory, GGUF layout: `rows` rows of `cols` values, `row_bytes` each.
struct DeviceMatrix {
  const uint8_t* data = nullptr;
  uint32_t type = 0;  // GgmlType
  int rows = 0;
  int cols = 0;
  size_t row_bytes = 0;
};

// Whether the kernels read `type` in place (the others are converted to F16 on upload): the
// float types, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q4_K, Q5_K and Q6_K.
bool kernels_read_type(uint32_t type);

// y[t][r] = sum_c W[r][c] x[t][c] (with `accumulate`, y[t][r] += that sum; then + bias[r] when
// `bias` is given) for n_tokens <= kMaxMatvecTokens; each row is read in coalesced segments of
// 32 chunks of 32 values (one chunk per lane) by one warp, or split over up to four warps when
// it has several segments (cuda_math::matvec_split). x must be 16-byte aligned.
void matvec(const DeviceMatrix& w, const float* x, int n_tokens, float* y, bool accumulate,
            const float* bias, cudaStream_t s);
// The kernel of the mat-vecs. Blocks: a block of four warps per four rows (or fewer rows of
// several segments), each warp one row. Rows: for single tokens only (batches use Blocks, with
// the same bits), a launch that covers the GPU once, each warp several rows with the next
// segments in flight while it computes one (float rows too long for its shared buffers, and rows
// not made of whole 32-value chunks, keep Blocks). Int8: for the quantized types it reads in
// place, at every batch size, activations quantized to int8 per block of 32 or 256 values as
// the CPU backend quantizes them for its decode kernels, integer dot products (dp4a) with the
// weights read as words; float weights keep Blocks. Its results differ from the others' by the
// activations' rounding (the quantized row of ../shared/data/README.md's tolerance table), and a
// batch gives each token its bits alone. GHOSTLINE_CUDA_MATVEC=rows or int8 selects them.
enum class MatvecKernel { Blocks, Rows, Int8 };
void select_matvec_kernel(MatvecKernel k);
MatvecKernel selected_matvec_kernel();
// Whether the int8 kernel is selected and reads w (a quantized type it reads in place, rows
// whose quantized activations fit its shared buffer).
bool int8_reads(const DeviceMatrix& w);
// One product of several that read the same activations: y = W x (+ bias).
struct MatvecTarget {
  const DeviceMatrix* w = nullptr;
  float* y = nullptr;
  const float* bias = nullptr;
};
// matvec for each of targets[0..n) (Q, K and V), each result as matvec gives it, bit for bit:
// consecutive matrices of one type are computed in one launch. False (nothing queued) unless
// all have the same columns.
bool matvec_shared_input(const MatvecTarget* targets, int n, const float* x, int n_tokens,
                         cudaStream_t s);
// y[t][r] = swiglu(sum_c G[r][c] x[t][c], sum_c U[r][c] x[t][c]): the gate and up projections
// and their SwiGLU in one kernel, each sum formed as matvec forms it. False (nothing queued)
// unless the two matrices have the same type and shape.
bool matvec_swiglu(const DeviceMatrix& gate, const DeviceMatrix& up, const float* x, int n_tokens,
                   float* y, cudaStream_t s);

// With the int8 kernel selected and every matrix of a type it reads: matvec_shared_input and
// matvec_swiglu of x normalized by RMSNorm with `norm_weight`, the norm computed by each block
// from x (cuda_math::warp_order_sum_squares, rms_normalized) instead of by a launch of its own.
// False (nothing queued) otherwise. Each token's values are the same alone or in a batch.
bool matvec_shared_input_normed(const MatvecTarget* targets, int n, const float* x,
                                const float* norm_weight, float eps, int n_tokens,
                                cudaStream_t s);
bool matvec_swiglu_normed(const DeviceMatrix& gate, const DeviceMatrix& up, const float* x,
                          const float* norm_weight, float eps, int n_tokens, float* y,
                          cudaStream_t s);

// Rows [row0, row0 + n_rows) of w as float32, row-major, for a GEMM tile.
void dequantize_rows(const DeviceMatrix& w, int row0, int n_rows, float* out, cudaStream_t s);
// The same rows rounded to fp16 bits (cuda_math::float_to_half), for a GEMM on tensor cores.
void dequantize_rows_f16(const DeviceMatrix& w, int row0, int n_rows, uint16_t* out,
                         cudaStream_t s);
// out[i] = x[i] rounded to fp16 bits (cuda_math::float_to_half_saturated), i < n.
void round_to_f16(const float* x, size_t n, uint16_t* out, cudaStream_t s);
// The GEMM of a long batch, y = W x by tiles of W's rows, in F32 or (x16 given) on tensor cores:
// defined with the backend's cuBLAS calls (cuda_backend.cpp, which says how), declared here for
// the kernel check too.
void matmul_tiles(cublasHandle_t h, const DeviceMatrix& w, const float* x, int n, uint16_t* x16,
                  void* tile, int tile_rows, float* y, cudaStream_t s);

// x[t] = row token[t] of the embedding matrix.
void embed(const DeviceMatrix& table, const int32_t* tokens, int n_tokens, float* x,
           cudaStream_t s);

void rmsnorm(const float* x, const float* weight, int n_rows, int n, float eps, float* out,
             cudaStream_t s);
// out[r] = the greedy token of row r of `logits` (n_rows rows of n floats), by
// cuda_math::argmax_push: the index of the largest value, ties to the lowest. A long row is
// split over many blocks, whose winners go through `scratch` (argmax_scratch_bytes(n_rows, n)
// of device memory; none for a short row).
size_t argmax_scratch_bytes(int n_rows, int n);
void argmax_rows(const float* logits, int n_rows, int n, void* scratch, int32_t* out,
                 cudaStream_t s);
void add_bias(float* y, const float* bias, int n_rows, int n, cudaStream_t s);
void add_in_place(float* x, const float* y, size_t n, cudaStream_t s);
void swiglu(float* gate, const float* up, size_t n, cudaStream_t s);

struct RopeParams {
  int n_head, n_head_kv, head_dim;
  float theta_base, freq_scale;
  bool neox;
};

// Paged KV in device memory, laid out as the host KvBlockPool: block-major, then layer, keys
// then values, kBlockTokens rows of kv_dim F16 values each.
struct KvLayout {
  uint16_t* base = nullptr;
  int kv_dim = 0;
  size_t block_elems = 0;  // n_layer * 2 * kBlockTokens * kv_dim
};

// The kernels below read the batch's first position from device memory (`start_pos`), so that a
// captured graph of a step replays at any position.

// Rotates q (n_tokens x n_head heads) and k (n_tokens x n_head_kv heads) at *start_pos + t, then
// stores k and v of the n_tokens at positions *start_pos.. of `layer` through the block table.
void rope_store_kv(float* q, float* k, const float* v, int n_tokens, const int32_t* start_pos,
                   const RopeParams& p, const KvLayout& kv, int layer, const int32_t* blocks,
                   cudaStream_t s);

// Causal grouped-query attention of each token's query heads over positions [0, *start_pos + t].
// Batches of up to kMaxMatvecTokens tokens (of any length with `split_any_batch`,
// kMaxMatvecTokens at a time) are split over the context (flash-decoding) when `scratch` holds
// attention_scratch_floats(n_head, head_dim) floats; each token's result is then the same alone
// or in a batch. Longer batches take one block per (query head, token).
void attention(const KvLayout& kv, int layer, const int32_t* blocks, const int32_t* start_pos,
               int n_tokens, const float* q, int n_head, int n_head_kv, int head_dim,
               float* scratch, float* out, cudaStream_t s, bool split_any_batch = false);
size_t attention_scratch_floats(int n_head, int head_dim);

}  // namespace ghostline::engine::cuda
