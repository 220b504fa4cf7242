// Internal interface between matmul.cpp (validation, activation quantization, threading,
// scratch) and the kernels compiled once per instruction set.
#pragma once

#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/gguf/quant.h"

namespace ghostline::engine::cpu {

// The block formats the kernels and matmul.cpp read (engine/gguf/quant.h), by their own names.
using gguf::bf16_to_fp32;
using gguf::BlockIq4Nl;
using gguf::BlockIq4Xs;
using gguf::BlockQ2_K;
using gguf::BlockQ3_K;
using gguf::BlockQ4_0;
using gguf::BlockQ4_1;
using gguf::BlockQ4_K;
using gguf::BlockQ5_0;
using gguf::BlockQ5_1;
using gguf::BlockQ5_K;
using gguf::BlockQ6_K;
using gguf::BlockQ8_0;
using gguf::can_dequantize;
using gguf::dequantize_row;
using gguf::fp16_to_fp32;
using gguf::iq4_xs_scale;
using gguf::k_scale_min;
using gguf::kIq4nlValues;
using gguf::kQK8_0;
using gguf::kQK_K;
using gguf::q3_k_scales;

namespace kernels {

// Activations quantized for integer dot products, n_tokens rows of `cols` values each:
// q[t * cols + k], one float scale per block of `block` values (32 for Q8_0/Q4_0 weights, 256
// for K-quants) at d[t * cols / block + b], and the sum of every 16 consecutive q at
// sum16[t * cols / 16 + g].
struct QuantizedActivations {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const int32_t* sum16 = nullptr;
  int block = 0;
  // For 32-value blocks, when the kernel set asks (KernelSet::quads): q again, each group of
  // four whole blocks (128 values) as the first 16 values of each block, then their second 16
  // values, which is how 4-bit weights store their low and high nibbles; and per block
  // d * sum of its q, for the offsets and mins of the weights.
  const int8_t* quads = nullptr;
  const float* dsum = nullptr;
};

struct DecodeJob {
  const WeightMatrix* w;
  const float* x;  // n_tokens x w->cols floats
  QuantizedActivations xq;
  int64_t n_tokens;  // 1..kMatmulDecodeMaxTokens
  float* y;
};

struct PrefillJob {
  const WeightMatrix* w;
  // x regrouped by pack_prefill_activations: tiles of KernelSet::tile_tokens tokens, each tile
  // [cols][tile_tokens] (zero-padded), so the kernel reads the tokens of a column contiguously.
  const float* x_packed;
  int64_t n_tokens;
  float* y;
};

// Int8 prefill: activations quantized to signed bytes per block of 32 values and token, in
// tiles of KernelSet::q8_tile_tokens tokens (zero-padded). Per tile, with T = q8_tile_tokens
// and groups of `group` values (16 or 32, as the weights' scales come):
struct Q8Tiles {
  int32_t* q = nullptr;     // [cols / 4][T]: 4 consecutive values of a token as one word
  float* d = nullptr;       // [cols / group][T]: the scale of the token's block
  int32_t* sum = nullptr;   // [cols / group][T]: the sum of the group's values
  float* dsum = nullptr;    // [cols / group][T]: d * the sum of the group's values
  int group = 0;
};

struct PrefillQ8Job {
  const WeightMatrix* w;
  Q8Tiles x;
  int64_t n_tokens;
  float* y;
};

// Prefill works on panels of `panel_rows` consecutive weight rows and chunks of kPrefillKc
// columns; each chunk of a panel is dequantized once into scratch and used for all tokens.
inline constexpr int64_t kPrefillKc = 256;

struct KernelSet {
  int panel_rows;
  int tile_tokens;
  int64_t scratch_floats;  // per thread, for prefill
  void (*decode_rows)(const DecodeJob& job, int64_t row_begin, int64_t row_end);
  void (*prefill_panels)(const PrefillJob& job, int64_t panel_begin, int64_t panel_end,
                         float* scratch);
  bool quads = false;  // wants QuantizedActivations::quads and dsum for 32-value blocks
  // Int8 prefill, where the level has it: the group size for weights of a type (0: the float
  // path), the activation packer (tiles [tile_begin, tile_end)) and the panel kernel.
  int q8_tile_tokens = 0;
  int (*q8_group)(GgmlType type) = nullptr;
  void (*pack_q8)(const float* x, int64_t n_tokens, int64_t cols, int64_t tile_begin,
                  int64_t tile_end, const Q8Tiles& out) = nullptr;
  void (*prefill_q8_panels)(const PrefillQ8Job& job, int64_t panel_begin, int64_t panel_end,
                            float* scratch) = nullptr;
  int64_t (*q8_scratch_floats)(int64_t cols) = nullptr;  // per thread, for prefill_q8_panels
  // Quantizes n values (whole blocks of `block`, a multiple of 16) for the decode kernels into
  // QuantizedActivations::q, d and sum16, where the level has its own (nullptr:
  // quantize_activations_portable).
  void (*quantize_activations)(const float* x, int64_t n, int block, int8_t* q, float* d,
                               int32_t* sum16) = nullptr;
  // Whether this level reads WeightMatrix::packed where it is set (of every packed_type), in
  // decode and prefill.
  bool reads_packed = false;
};

// The int8 prefill's group of values per weight scale for `type` (0: the type has no int8
// prefill), and whether its groups have an offset besides (a min, Q4_1's m) that the token's
// scaled sum takes off; every level with an int8 prefill groups the types the same way.
constexpr int q8_group(GgmlType type) {
  // The types of integer dot products (int8_activation_block), by the size of their scales'
  // sub-blocks.
  if (int8_activation_block(type) == 0) return 0;
  return type == GgmlType::Q2_K || type == GgmlType::Q3_K || type == GgmlType::Q6_K ? 16 : 32;
}

constexpr bool q8_has_offset(GgmlType type) {
  return type == GgmlType::Q4_1 || type == GgmlType::Q5_1 || type == GgmlType::Q2_K ||
         type == GgmlType::Q4_K || type == GgmlType::Q5_K;
}

// Which of the 32-value block types store a fifth bit per value (Q5_0, Q5_1) and a min per
// block (Q4_1, Q5_1).
constexpr bool has_fifth_bits(GgmlType type) {
  return type == GgmlType::Q5_0 || type == GgmlType::Q5_1;
}
constexpr bool has_block_min(GgmlType type) {
  return type == GgmlType::Q4_1 || type == GgmlType::Q5_1;
}

// What a packed type's stored byte or nibble holds above its value: Q8_0's bytes are flipped
// to unsigned (128), Q4_0 and Q5_0 store value + 8 and + 16, Q4_1 and Q5_1 the value itself.
// IQ4_NL's and IQ4_XS's nibbles index their grid, which the kernels look up with 128 added (as
// Q8_0's bytes).
constexpr int packed_stored_offset(GgmlType type) {
  return type == GgmlType::Q8_0 || type == GgmlType::IQ4_NL || type == GgmlType::IQ4_XS ? 128
         : has_block_min(type)                                                          ? 0
         : has_fifth_bits(type)                                                         ? 16
                                                                                        : 8;
}

// The types matmul_pack packs (and kernel levels with KernelSet::reads_packed read packed).
constexpr bool packed_type(GgmlType type) {
  return type == GgmlType::Q8_0 || type == GgmlType::Q4_0 || type == GgmlType::Q4_1 ||
         type == GgmlType::Q5_0 || type == GgmlType::Q5_1 || type == GgmlType::IQ4_NL ||
         type == GgmlType::IQ4_XS || type == GgmlType::Q2_K || type == GgmlType::Q3_K ||
         type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K;
}

// Where the fifth bits (Q5_0, Q5_1), the scales and the mins (Q4_1, Q5_1) of a packed group of
// rows of `cols` values begin (the layout of matmul_pack, in matmul.h).
constexpr int64_t packed_masks_offset(int64_t cols) {
  return cols * kPackedRows / 2;
}
constexpr int64_t packed_scales_offset(GgmlType type, int64_t cols) {
  return type == GgmlType::Q8_0 ? cols * kPackedRows : has_fifth_bits(type) ? cols * 20 : cols * 16;
}
constexpr int64_t packed_mins_offset(GgmlType type, int64_t cols) {
  return packed_scales_offset(type, cols) + cols * 2;
}

// IQ4_XS packed: IQ4_NL's words (its 32-value sub-blocks as IQ4_NL's blocks), then per
// sub-block [cols / 32][32] its signed scales ls - 32 as bytes, then per super-block [cols / 256]
// [32] d in fp16.
constexpr int64_t packed_xs_d_offset(int64_t cols) {
  return cols * kPackedRows / 2 + cols;
}

// Q4_K packed: per super-block of 256 values, kQ4kPackedBytes for the group's 32 rows: the
// words [4 pairs of sub-blocks][8][32 rows], then per sub-block [8][32] its scales and [8][32]
// its mins as bytes, then [32] d and [32] dmin in fp16.
inline constexpr int64_t kQ4kScalesAt = 4096, kQ4kMinsAt = 4352, kQ4kDAt = 4608, kQ4kDminAt = 4672,
                         kQ4kPackedBytes = 4736;

// Q5_K packed: Q4_K's layout, then the fifth bits as Q5_0's masks: per word of nibbles and half
// of the group (16 rows), a 64-bit mask for the low nibbles and one for the high ones, bit n
// for byte n of the half's 16 rows x 4 bytes.
inline constexpr int64_t kQ5kMasksAt = kQ4kPackedBytes, kQ5kPackedBytes = kQ4kPackedBytes + 1024;

// The bytes per super-block of a packed Q4_K or Q5_K group.
constexpr int64_t packed_q45_k_bytes(GgmlType type) {
  return type == GgmlType::Q5_K ? kQ5kPackedBytes : kQ4kPackedBytes;
}

// Q6_K packed: per super-block, kQ6kPackedBytes for the group's 32 rows (as many as the file's):
// the words of ql [2 halves][16][32 rows], the words of qh as they are [2][8][32 rows] (a word
// of qh holds the high bits of ql words w and w + 8), the scales [16][32] and [32] d in fp16.
inline constexpr int64_t kQ6kHighAt = 4096, kQ6kScalesAt = 6144, kQ6kDAt = 6656,
                         kQ6kPackedBytes = 6720;

// Q2_K packed: per super-block, kQ2kPackedBytes for the group's 32 rows (as many as the
// file's): the words of qs [16][32 rows] (byte l of word w holds values 4w % 32 + l of the four
// 2-bit planes of half w / 8), the scale bytes as stored [16][32] (the scale in the low nibble,
// the min in the high one), then [32] d and [32] dmin in fp16.
inline constexpr int64_t kQ2kScalesAt = 2048, kQ2kDAt = 2560, kQ2kDminAt = 2624,
                         kQ2kPackedBytes = 2688;

// Q3_K packed: per super-block, kQ3kPackedBytes for the group's 32 rows (as many as the
// file's), in the order decode reads them: the 12 scale bytes as stored [12][32 rows], [32] d in
// fp16, then the words of qs as Q2_K's [32 rows] each, and those of hmask as they are (a word of
// hmask holds the third bits of qs words w and w + 8): qs word w < 8 followed by hmask word w,
// then qs words 8 to 15. With qs and hmask in two regions 2 KiB apart, decode from memory ran
// markedly slower.
inline constexpr int64_t kQ3kScalesAt = 0, kQ3kDAt = 384, kQ3kWordsAt = 448, kQ3kPackedBytes = 3520;

// Where qs word w (of 32 rows) of a packed Q2_K or Q3_K super-block begins, and Q3_K's hmask
// word w.
constexpr int64_t q23_k_qs_word_at(GgmlType type, int w) {
  return type == GgmlType::Q2_K ? w * kPackedRows * 4
                                : kQ3kWordsAt + (w < 8 ? 2 * w : w + 8) * kPackedRows * 4;
}
constexpr int64_t q3_k_hmask_word_at(int w) {
  return kQ3kWordsAt + (2 * w + 1) * kPackedRows * 4;
}
static_assert(q23_k_qs_word_at(GgmlType::Q3_K, 15) + kPackedRows * 4 == kQ3kPackedBytes);

// The bytes per super-block of a packed Q2_K or Q3_K group.
constexpr int64_t packed_q23_k_bytes(GgmlType type) {
  return type == GgmlType::Q3_K ? kQ3kPackedBytes : kQ2kPackedBytes;
}

// The values of one block of a packed type: super-blocks of 256 for the K-quants, 32 for the
// others (IQ4_XS's packed blocks are its 32-value sub-blocks).
constexpr int64_t packed_block_values(GgmlType type) {
  return type == GgmlType::Q2_K || type == GgmlType::Q3_K || type == GgmlType::Q4_K ||
                 type == GgmlType::Q5_K || type == GgmlType::Q6_K
             ? kQK_K
             : kQK8_0;
}

// Bytes of one packed group of kPackedRows rows of `cols` values of `type`.
constexpr int64_t packed_group_bytes(GgmlType type, int64_t cols) {
  switch (type) {
    case GgmlType::Q8_0:
      return 34 * cols;
    case GgmlType::Q5_0:
      return 22 * cols;
    case GgmlType::Q4_1:
      return 20 * cols;
    case GgmlType::Q5_1:
      return 24 * cols;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return cols / kQK_K * packed_q45_k_bytes(type);
    case GgmlType::Q6_K:
      return cols / kQK_K * kQ6kPackedBytes;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
      return cols / kQK_K * packed_q23_k_bytes(type);
    case GgmlType::IQ4_XS:
      return packed_xs_d_offset(cols) + cols / kQK_K * kPackedRows * 2;
    default:
      return 18 * cols;  // Q4_0, IQ4_NL
  }
}

// A packed group's bytes per block (a whole number for every column count, as groups are
// linear in it), rounded up to cache lines: how far decode's prefetch of the next group moves
// per block.
constexpr int64_t packed_prefetch_step(GgmlType type) {
  const int64_t blocks = kQK_K / packed_block_values(type);
  return (packed_group_bytes(type, kQK_K) / blocks + 63) / 64 * 64;
}
static_assert(packed_prefetch_step(GgmlType::Q8_0) == 1088 &&
              packed_prefetch_step(GgmlType::IQ4_XS) == 576 &&
              packed_prefetch_step(GgmlType::Q6_K) == kQ6kPackedBytes &&
              packed_prefetch_step(GgmlType::Q2_K) == kQ2kPackedBytes &&
              packed_prefetch_step(GgmlType::Q3_K) == kQ3kPackedBytes);

const KernelSet& scalar_kernels();
#if GHOSTLINE_X86_KERNELS  // the *.avx2/avxvnni/avx512.cpp files are built for x86 only
const KernelSet& avx2_kernels();     // call only when isa_supported(CpuIsa::kAvx2)
const KernelSet& avxvnni_kernels();  // call only when isa_supported(CpuIsa::kAvxVnni)
const KernelSet& avx512_kernels();  // call only when isa_supported(CpuIsa::kAvx512)
#endif
#if GHOSTLINE_NEON_KERNELS  // the *.neon/neondot.cpp files are built for aarch64 only
const KernelSet& neon_kernels();     // call only when isa_supported(CpuIsa::kNeon)
const KernelSet& neondot_kernels();  // call only when isa_supported(CpuIsa::kNeonDot)
#endif

// Packs tokens [tile_begin, tile_end) * tile_tokens of x (n_tokens x cols) into `packed`.
void pack_prefill_activations(const float* x, int64_t n_tokens, int64_t cols, int tile_tokens,
                              int64_t tile_begin, int64_t tile_end, float* packed);

// KernelSet::quantize_activations in portable code, for levels without their own.
void quantize_activations_portable(const float* x, int64_t n, int block, int8_t* q, float* d,
                                   int32_t* sum16);

// Dequantizes values [k0, k0 + n) of a row (k0 and n multiples of the block size).
void dequantize_range(GgmlType type, const std::byte* row, int64_t k0, int64_t n, float* out);

}  // namespace kernels
}  // namespace ghostline::engine::cpu
