// Matrix products of a GGUF weight matrix with a batch of activation rows: the bulk of every
// forward pass. Decode (a few tokens) is bound by memory bandwidth and uses integer dot
// products on activations quantized once per call; prefill (many tokens) is bound by compute
// and reuses each unpacked block of weights for all tokens from cache, as floats or, where the
// CPU has VNNI, as bytes against activations quantized per block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/thread_pool.h"
#include "engine/gguf/ggml_type.h"

namespace ghostline::engine::cpu {

// A 2-D GGUF tensor: `rows` rows of `cols` values of `type`, each row `row_bytes` long.
// `packed`, where set, is the same matrix as matmul_pack writes it; the kernel levels that read
// that layout use it instead of `data`, which must stay valid for the others.
struct WeightMatrix {
  GgmlType type;
  int64_t rows;
  int64_t cols;
  const std::byte* data;
  size_t row_bytes;
  const std::byte* packed = nullptr;
};

// Packed weights. Decode of a GGUF row reads its blocks one by one, and a block of 18 to 34
// bytes lies across vector lanes: regathering it costs more instructions than the memory it
// comes from takes time. Packed, the rows come in groups of kPackedRows, word-interleaved: one
// 512-bit vector holds 4 consecutive values (4-bit types: 4 stored bytes) of 16 rows (a 256-bit
// one, of 8 rows), so one multiply-add of a vector by 4 values of the input advances 16 (8)
// rows, and the int8 prefill reads the layout as its own panels. Groups of 32 rows follow each
// other (the last one padded with zero rows); each holds (kernels::packed_group_bytes):
// - Q8_0: [cols / 4][32] words of value + 128, then the scales, [cols / 32][32] fp16;
// - Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL: per block [4][32] words of 4 stored bytes (low
//   nibbles: values 4k..4k+3 of the block, high: 16 + 4k..; IQ4_NL's index its grid); Q5_0 and
//   Q5_1 then per block [4][2 halves of 16 rows] two 64-bit masks, each bit the fifth bit of one
//   byte's low (first mask) or high nibble; then the scales as Q8_0's, and Q4_1 and Q5_1's mins
//   the same way (32 * row_bytes in all);
// - IQ4_XS: IQ4_NL's words for its 32-value sub-blocks, then each sub-block's scale ls - 32 as
//   a byte per row, then each super-block's d (1.5% more than the file's rows);
// - Q2_K: per super-block, the words of qs (4 stored bytes: four 2-bit planes, values 32s + l
//   of its half, one per plane s), its scale bytes as stored (scale and min nibbles), d and dmin
//   (as many bytes as the file's rows);
// - Q3_K: per super-block, in the order decode reads them, its 12 scale bytes as stored, d, and
//   Q2_K's words of qs with the words of hmask as stored between them (hmask word w, which holds
//   the third bits of qs words w and w + 8, after qs word w) (as many bytes as the file's rows);
// - Q4_K: per super-block, its words (4 stored bytes: low nibbles of one sub-block, high ones
//   of the next) and its scales and mins unpacked to bytes, with d and dmin (2.8% more than
//   the file's rows);
// - Q5_K: Q4_K's layout, then per super-block its fifth bits as Q5_0's masks, per word and
//   half of the group (2.3% more than the file's rows);
// - Q6_K: per super-block, the words of its low bits, those of its high bits as stored (one
//   word for two of the low bits' words), its scales and d (as many bytes as the file's).
inline constexpr int64_t kPackedRows = 32;

// Whether kernel level `isa` reads packed weights of w's type: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL, IQ4_XS, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K at the AVX-512, AVX-VNNI and AVX2 levels (at
// AVX2, whose maddubs would saturate on Q8_0's stored bytes and on the grid values + 128, the
// kernels take those types' signed values).
bool matmul_packs(const WeightMatrix& w, CpuIsa isa);

// Bytes matmul_pack writes for w (whole groups of kPackedRows rows; for a multiple of
// kPackedRows rows, also where the packed rows after them begin).
size_t matmul_packed_bytes(const WeightMatrix& w);

// Writes w's rows packed into `out` (matmul_packed_bytes(w) bytes, 64-byte aligned), groups
// shared over the pool. Throws std::invalid_argument for a type matmul_packs never accepts.
void matmul_pack(const WeightMatrix& w, std::byte* out, ThreadPool& pool);

// Row r of w dequantized from w.packed into out[0 .. w.cols): what dequantize_row gives for
// the same row of w.data (the embedding lookup of a model whose output matrix is its
// embedding table).
void matmul_packed_row(const WeightMatrix& w, int64_t r, float* out);

// Whether matmul handles weights of `type` (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL, IQ4_XS, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K).
bool matmul_supports(GgmlType type);

// Up to this many tokens a product takes the decode path (integer dot products on quantized
// activations for quantized weights); beyond it, the tiled prefill path. A speculative
// verification of up to 15 proposals is computed as single steps: each pass over a group of
// weight rows serves several tokens, and the passes after the first find the group in cache.
inline constexpr int64_t kMatmulDecodeMaxTokens = 16;

// Whether the tokens of a product must each come out as they would alone (kSteps: speculative
// verification compares them with single steps, and the decode kernels guarantee it) or may be
// computed together (kBatch: the tokens of a prompt). A batch of kMatmulBatchMinTokens tokens
// or more takes the prefill path, which reads each weight once for all its tokens: from about
// this many tokens on it is faster than the decode path, which reads packed weights once for up
// to four tokens at the AVX-512 level (two for Q2_K and Q3_K), for two at the AVX2 and
// AVX-VNNI levels (Q2_K, Q3_K and Q6_K once per token) and once per token elsewhere.
enum class Tokens { kSteps, kBatch };
inline constexpr int64_t kMatmulBatchMinTokens = 6;

// Whether a product of `n_tokens` tokens with weights of `type` at kernel level `isa` rounds the
// activations to 8 bits per block of values (integer dot products) rather than using them as
// floats: decode of quantized weights, and prefill where the level has VNNI.
bool matmul_quantizes_activations(GgmlType type, int64_t n_tokens, CpuIsa isa,
                                  Tokens tokens = Tokens::kSteps);

// y[t * w.rows + r] = dot(row r of w, x[t * w.cols ...]) for t in [0, n_tokens).
// x and y must not overlap. Throws std::invalid_argument for an unsupported type or a column
// count that is not a whole number of blocks.
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            Tokens tokens = Tokens::kSteps);

// The same with an explicit kernel level (which must be supported by this CPU): lets tests and
// benchmarks run every path on one machine.
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            CpuIsa isa, Tokens tokens = Tokens::kSteps);

// matmul(*ws[i], x, n_tokens, ys[i], pool) for every i, bit for bit, for matrices that share
// their input x (all with the same column count): q, k and v of attention, up and gate of the
// feed-forward. Decode quantizes x once per activation block size and splits the rows of all
// the matrices over the pool in a single parallel region, rather than one per matrix, which
// saves a fork and join each and balances small matrices better; prefill calls matmul for each
// matrix. The ys must not overlap x or one another. Throws std::invalid_argument as matmul
// does, when the spans differ in size or when the column counts differ.
void matmul_shared_input(std::span<const WeightMatrix* const> ws, const float* x, int64_t n_tokens,
                         std::span<float* const> ys, ThreadPool& pool,
                         Tokens tokens = Tokens::kSteps);

// The same with an explicit kernel level (which must be supported by this CPU).
void matmul_shared_input(std::span<const WeightMatrix* const> ws, const float* x, int64_t n_tokens,
                         std::span<float* const> ys, ThreadPool& pool, CpuIsa isa,
                         Tokens tokens = Tokens::kSteps);

// Dequantizes each row and accumulates the dot products in double: the oracle of the tests.
void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y);

}  // namespace ghostline::engine::cpu
