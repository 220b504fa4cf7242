#include "engine/backend/cpu/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/backend/cpu/matmul_kernels.h"
#include "engine/gguf/quant.h"

namespace ghostline::engine::cpu {

namespace kernels {

void pack_prefill_activations(const float* x, int64_t n_tokens, int64_t cols, int tile_tokens,
                              int64_t tile_begin, int64_t tile_end, float* packed) {
  for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
    const int64_t t0 = tile * tile_tokens;
    float* out = packed + t0 * cols;
    for (int j = 0; j < tile_tokens; ++j) {
      const float* xt = x + (t0 + j) * cols;
      if (t0 + j < n_tokens) {
        for (int64_t k = 0; k < cols; ++k) out[k * tile_tokens + j] = xt[k];
      } else {
        for (int64_t k = 0; k < cols; ++k) out[k * tile_tokens + j] = 0.0f;
      }
    }
  }
}

void quantize_activations_portable(const float* x, int64_t n, int block, int8_t* q, float* d,
                                   int32_t* sum16) {
  for (int64_t b = 0; b < n / block; ++b) {
    const float* xb = x + b * block;
    float amax = 0.0f;
    for (int j = 0; j < block; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float scale = amax / 127.0f;
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    d[b] = scale;
    // Rounds half away from zero like roundf, in a form the compiler vectorizes.
    for (int j = 0; j < block; ++j) {
      const float v = xb[j] * inv;
      q[b * block + j] = static_cast<int8_t>(static_cast<int>(v + (v >= 0.0f ? 0.5f : -0.5f)));
    }
  }
  for (int64_t g = 0; g < n / 16; ++g) {
    int32_t sum = 0;
    for (int j = 0; j < 16; ++j) sum += q[g * 16 + j];
    sum16[g] = sum;
  }
}

void dequantize_range(GgmlType type, const std::byte* row, int64_t k0, int64_t n, float* out) {
  const auto& traits = ggml_type_traits(type);
  const std::byte* src = row + static_cast<size_t>(k0 / traits.block_elems) * traits.block_bytes;
  dequantize_row(type, src, out, n);
}

}  // namespace kernels

namespace {

// Activations quantized for the decode kernels (see kernels::QuantizedActivations).
struct ActivationScratch {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> sum16;
  std::vector<int8_t> quads;
  std::vector<float> dsum;
};

// A product of several matrices with one input quantizes it once per block size the matrices
// want; the decode kernels have two (kQK8_0 and kQK_K).
constexpr int kActivationBlockSizes = 2;

// Grows only; after the first calls of a forward pass no product allocates.
struct Scratch {
  // [0] for 32-value blocks, [1] for 256-value blocks: the two sets never alias.
  ActivationScratch act[kActivationBlockSizes];
  std::vector<kernels::DecodeJob> jobs;  // matmul_shared_input: one per matrix
  std::vector<int64_t> group_ends;       // and the end of its row groups in the joint range
  std::vector<float> prefill;
  std::vector<float> packed_x;
  // Activations packed for the int8 prefill: [0] for groups of 32 values, [1] for 16.
  struct Q8Scratch {
    std::vector<int32_t> q;
    std::vector<float> d;
    std::vector<int32_t> sum;
    std::vector<float> dsum;
  } q8[2];
};

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

template <typename T>
T* sized(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Which of Scratch::act activations quantized in blocks of `block` values go to.
int activation_slot(int block) {
  return block == kQK8_0 ? 0 : 1;
}

// Symmetric 8-bit quantization with one float scale per block and sums of 16 values.
kernels::QuantizedActivations quantize_activations(const float* x, int64_t n_tokens, int64_t cols,
                                                   int block, const kernels::KernelSet& ks,
                                                   ActivationScratch& s) {
  const int64_t n = n_tokens * cols;
  int8_t* q = sized(s.q, static_cast<size_t>(n));
  float* d = sized(s.d, static_cast<size_t>(n / block));
  int32_t* sum16 = sized(s.sum16, static_cast<size_t>(n / 16));
  (ks.quantize_activations ? ks.quantize_activations : kernels::quantize_activations_portable)(
      x, n, block, q, d, sum16);
  return {q, d, sum16, block};
}

// QuantizedActivations::quads and dsum for 32-value blocks (rows of `cols` values).
void add_quads(kernels::QuantizedActivations& a, int64_t n_tokens, int64_t cols,
               ActivationScratch& s) {
  const int64_t n = n_tokens * cols, nb = cols / kQK8_0;
  int8_t* quads = sized(s.quads, static_cast<size_t>(n));
  float* dsum = sized(s.dsum, static_cast<size_t>(n / kQK8_0));
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int8_t* q = a.q + t * cols;
    int8_t* out = quads + t * cols;
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4)
      for (int i = 0; i < 4; ++i)
        for (int half = 0; half < 2; ++half)
          std::memcpy(out + b * kQK8_0 + 64 * half + 16 * i, q + (b + i) * kQK8_0 + 16 * half, 16);
    std::memcpy(out + b * kQK8_0, q + b * kQK8_0, static_cast<size_t>((nb - b) * kQK8_0));
  }
  for (int64_t b = 0; b < n / kQK8_0; ++b)
    dsum[b] = a.d[b] * static_cast<float>(a.sum16[2 * b] + a.sum16[2 * b + 1]);
  a.quads = quads;
  a.dsum = dsum;
}

const kernels::KernelSet& kernels_for(CpuIsa isa) {
  switch (isa) {
#if GHOSTLINE_X86_KERNELS
    case CpuIsa::kAvx512:
      return kernels::avx512_kernels();
    case CpuIsa::kAvxVnni:
      return kernels::avxvnni_kernels();
    case CpuIsa::kAvx2:
      return kernels::avx2_kernels();
#endif
#if GHOSTLINE_NEON_KERNELS
    case CpuIsa::kNeonDot:
      return kernels::neondot_kernels();
    case CpuIsa::kNeon:
      return kernels::neon_kernels();
#endif
    default:  // kScalar, and levels this target does not build (never supported here)
      break;
  }
  return kernels::scalar_kernels();
}

// Whether the decode kernels of `ks` read QuantizedActivations::quads or dsum for `w`, whose
// activations come in blocks of `block` values (Q8_0's reads only dsum).
bool wants_quads(const WeightMatrix& w, int block, const kernels::KernelSet& ks) {
  return block == kQK8_0 && ks.quads && !(w.packed && ks.reads_packed);
}

// Decode splits a matrix into groups of 16 rows, which keep each thread's slice of y on its own
// cache lines. A row's result does not depend on the range it is computed in, so the threads
// share the groups as they run (parallel_for_balanced).
constexpr int64_t kRowGroup = 16;

int64_t row_groups(const WeightMatrix& w) {
  return (w.rows + kRowGroup - 1) / kRowGroup;
}

// The decode job of y = w x. x is quantized for it in the block size it needs unless already
// in xq (by block size: see activation_slot), so that matrices sharing x quantize it once; its
// job gets the quads only if it wants them.
kernels::DecodeJob decode_job(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                              const kernels::KernelSet& ks,
                              kernels::QuantizedActivations (&xq)[kActivationBlockSizes],
                              Scratch& s) {
  kernels::DecodeJob job{&w, x, {}, n_tokens, y};
  const int block = int8_activation_block(w.type);
  if (block == 0) return job;
  const int slot = activation_slot(block);
  kernels::QuantizedActivations& a = xq[slot];
  if (a.block == 0) a = quantize_activations(x, n_tokens, w.cols, block, ks, s.act[slot]);
  const bool quads = wants_quads(w, block, ks);
  if (quads && a.quads == nullptr) add_quads(a, n_tokens, w.cols, s.act[slot]);
  job.xq = a;
  if (!quads) {
    job.xq.quads = nullptr;
    job.xq.dsum = nullptr;
  }
  return job;
}

void validate(const WeightMatrix& w) {
  if (!matmul_supports(w.type))
    throw std::invalid_argument("matmul: weights of type " + std::string(ggml_type_name(w.type)) +
                                " are not supported");
  const auto& traits = ggml_type_traits(w.type);
  if (w.cols <= 0 || w.rows <= 0 || w.cols % traits.block_elems != 0 ||
      w.row_bytes < ggml_row_bytes(w.type, w.cols))
    throw std::invalid_argument("matmul: a " + std::to_string(w.rows) + " x " +
                                std::to_string(w.cols) + " " + std::string(ggml_type_name(w.type)) +
                                " matrix must have whole blocks of " +
                                std::to_string(traits.block_elems) + " values per row");
}

// Which of Scratch::q8 holds activations packed in groups of `group` values.
int q8_slot(int group) {
  return group == 32 ? 0 : 1;
}

// x quantized to bytes for the int8 prefill, in tiles of tokens and groups of `group` values,
// into the thread's scratch for that group size (so that products sharing x pack it once).
kernels::Q8Tiles pack_q8_tiles(const float* x, int64_t n_tokens, int64_t cols, int group,
                               const kernels::KernelSet& ks, ThreadPool& pool) {
  Scratch::Q8Scratch& s = thread_scratch().q8[q8_slot(group)];
  const int64_t tiles = (n_tokens + ks.q8_tile_tokens - 1) / ks.q8_tile_tokens;
  const auto tile_groups = static_cast<size_t>(tiles * ks.q8_tile_tokens * (cols / group));
  kernels::Q8Tiles xq;
  xq.q = sized(s.q, static_cast<size_t>(tiles * ks.q8_tile_tokens * (cols / 4)));
  xq.d = sized(s.d, tile_groups);
  xq.sum = sized(s.sum, tile_groups);
  xq.dsum = sized(s.dsum, tile_groups);
  xq.group = group;
  pool.parallel_for(
      tiles, [&](int64_t t0, int64_t t1, int) { ks.pack_q8(x, n_tokens, cols, t0, t1, xq); });
  return xq;
}

// y = w x by integer dot products with x packed by pack_q8_tiles in w's group size.
void prefill_q8(const WeightMatrix& w, const kernels::Q8Tiles& xq, int64_t n_tokens, float* y,
                const kernels::KernelSet& ks, ThreadPool& pool) {
  const kernels::PrefillQ8Job job{&w, xq, n_tokens, y};
  const int64_t panels = (w.rows + ks.panel_rows - 1) / ks.panel_rows;
  pool.parallel_for_balanced(panels, [&](int64_t p0, int64_t p1, int) {
    float* scratch =
        sized(thread_scratch().prefill, static_cast<size_t>(ks.q8_scratch_floats(w.cols)));
    ks.prefill_q8_panels(job, p0, p1, scratch);
  });
}

// The int8 prefill's group size for w at `ks` (0: the float path).
int q8_group(const WeightMatrix& w, const kernels::KernelSet& ks) {
  return ks.q8_group ? ks.q8_group(w.type) : 0;
}

// The kernels of level `isa`; throws std::invalid_argument if this CPU lacks it.
const kernels::KernelSet& supported_kernels(CpuIsa isa) {
  if (!isa_supported(isa))
    throw std::invalid_argument("matmul: kernel level " + std::string(isa_name(isa)) +
                                " is not supported by this CPU (" + describe_cpu_features() + ")");
  return kernels_for(isa);
}

// Whether a product of n_tokens takes the decode kernels.
bool decode_path(int64_t n_tokens, Tokens tokens) {
  return n_tokens <= kMatmulDecodeMaxTokens &&
         (tokens == Tokens::kSteps || n_tokens < kMatmulBatchMinTokens);
}

}  // namespace

bool matmul_supports(GgmlType type) {
  return can_dequantize(type);
}

bool matmul_quantizes_activations(GgmlType type, int64_t n_tokens, CpuIsa isa, Tokens tokens) {
  if (decode_path(n_tokens, tokens)) return int8_activation_block(type) != 0;
  const auto& ks = kernels_for(isa);
  return ks.q8_group != nullptr && ks.q8_group(type) != 0;
}

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            Tokens tokens) {
  matmul(w, x, n_tokens, y, pool, active_isa(), tokens);
}

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            CpuIsa isa, Tokens tokens) {
  validate(w);
  if (n_tokens <= 0) return;
  const auto& ks = supported_kernels(isa);

  if (decode_path(n_tokens, tokens)) {
    kernels::QuantizedActivations xq[kActivationBlockSizes];
    const kernels::DecodeJob job = decode_job(w, x, n_tokens, y, ks, xq, thread_scratch());
    pool.parallel_for_balanced(row_groups(w), [&](int64_t g0, int64_t g1, int) {
      ks.decode_rows(job, g0 * kRowGroup, std::min(w.rows, g1 * kRowGroup));
    });
    return;
  }

  if (const int group = q8_group(w, ks); group != 0) {
    prefill_q8(w, pack_q8_tiles(x, n_tokens, w.cols, group, ks, pool), n_tokens, y, ks, pool);
    return;
  }

  // Regroup x once so that each register tile reads its tokens' values of a column together.
  const int64_t tiles = (n_tokens + ks.tile_tokens - 1) / ks.tile_tokens;
  float* packed =
      sized(thread_scratch().packed_x, static_cast<size_t>(tiles * ks.tile_tokens * w.cols));
  pool.parallel_for(tiles, [&](int64_t t0, int64_t t1, int) {
    kernels::pack_prefill_activations(x, n_tokens, w.cols, ks.tile_tokens, t0, t1, packed);
  });
  const kernels::PrefillJob job{&w, packed, n_tokens, y};
  const int64_t panels = (w.rows + ks.panel_rows - 1) / ks.panel_rows;
  pool.parallel_for_balanced(panels, [&](int64_t p0, int64_t p1, int) {
    float* scratch = sized(thread_scratch().prefill, static_cast<size_t>(ks.scratch_floats));
    ks.prefill_panels(job, p0, p1, scratch);
  });
}

void matmul_shared_input(std::span<const WeightMatrix* const> ws, const float* x, int64_t n_tokens,
                         std::span<float* const> ys, ThreadPool& pool, Tokens tokens) {
  matmul_shared_input(ws, x, n_tokens, ys, pool, active_isa(), tokens);
}

void matmul_shared_input(std::span<const WeightMatrix* const> ws, const float* x, int64_t n_tokens,
                         std::span<float* const> ys, ThreadPool& pool, CpuIsa isa,
                         Tokens tokens) {
  if (ws.size() != ys.size())
    throw std::invalid_argument("matmul_shared_input: " + std::to_string(ws.size()) +
                                " matrices but " + std::to_string(ys.size()) + " outputs");
  for (const WeightMatrix* w : ws) {
    validate(*w);
    if (w->cols != ws[0]->cols)
      throw std::invalid_argument("matmul_shared_input: matrices of " +
                                  std::to_string(ws[0]->cols) + " and " + std::to_string(w->cols) +
                                  " columns cannot share an input");
  }
  if (ws.empty() || n_tokens <= 0) return;
  const auto& ks = supported_kernels(isa);

  if (!decode_path(n_tokens, tokens)) {
    // x packed once per group size of the int8 prefill; other matrices go through matmul.
    kernels::Q8Tiles packed[2];
    for (size_t i = 0; i < ws.size(); ++i) {
      const int group = q8_group(*ws[i], ks);
      if (group == 0) {
        matmul(*ws[i], x, n_tokens, ys[i], pool, isa, tokens);
        continue;
      }
      kernels::Q8Tiles& xq = packed[q8_slot(group)];
      if (xq.group == 0) xq = pack_q8_tiles(x, n_tokens, ws[i]->cols, group, ks, pool);
      prefill_q8(*ws[i], xq, n_tokens, ys[i], ks, pool);
    }
    return;
  }

  // One decode job per matrix, as matmul would make it, x quantized once per block size. Each
  // job is built whole by decode_job: GCC 12 at -O3 (loop distribution) miscompiled a loop that
  // initialized a job and then overwrote its xq, leaving xq.d and xq.sum16 null.
  Scratch& s = thread_scratch();
  kernels::QuantizedActivations xq[kActivationBlockSizes];
  s.jobs.resize(ws.size());
  s.group_ends.resize(ws.size());
  int64_t groups = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    s.jobs[i] = decode_job(*ws[i], x, n_tokens, ys[i], ks, xq, s);
    groups += row_groups(*ws[i]);
    s.group_ends[i] = groups;
  }

  // One parallel region over the row groups of all matrices, one after another; a range that
  // spans matrices goes to each matrix's kernel in turn.
  const std::vector<kernels::DecodeJob>& jobs = s.jobs;
  const std::vector<int64_t>& ends = s.group_ends;
  pool.parallel_for_balanced(groups, [&](int64_t g0, int64_t g1, int) {
    auto i = static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), g0) - ends.begin());
    for (; g0 < g1; ++i) {
      const int64_t first = i ? ends[i - 1] : 0, end = std::min(g1, ends[i]);
      ks.decode_rows(jobs[i], (g0 - first) * kRowGroup,
                     std::min(jobs[i].w->rows, (end - first) * kRowGroup));
      g0 = end;
    }
  });
}

bool matmul_packs(const WeightMatrix& w, CpuIsa isa) {
  return kernels::packed_type(w.type) && isa_supported(isa) && kernels_for(isa).reads_packed;
}

size_t matmul_packed_bytes(const WeightMatrix& w) {
  const auto groups = static_cast<size_t>((w.rows + kPackedRows - 1) / kPackedRows);
  return groups * static_cast<size_t>(kernels::packed_group_bytes(w.type, w.cols));
}

namespace {

using kernels::packed_masks_offset;
using kernels::packed_mins_offset;
using kernels::packed_scales_offset;

// Byte offset within a packed group of the word of value `k` (a multiple of 4) of row `i`.
size_t packed_word_offset(GgmlType type, int64_t k, int64_t i) {
  if (type == GgmlType::Q8_0) return static_cast<size_t>((k / 4 * kPackedRows + i) * 4);
  // 4-bit types: word j of block b holds stored bytes 4j..4j+3, values 4j.. and 16 + 4j..
  const int64_t b = k / kQK8_0, j = k % kQK8_0 % 16 / 4;
  return static_cast<size_t>(((b * 4 + j) * kPackedRows + i) * 4);
}

// Q5_0 / Q5_1's mask of block b, word j, for row i: the low nibbles' (high = false) or the high
// ones'.
size_t packed_mask_offset(int64_t cols, int64_t b, int64_t j, int64_t i, bool high) {
  return packed_masks_offset(cols) +
         static_cast<size_t>((((b * 4 + j) * 2 + i / 16) * 2 + (high ? 1 : 0)) * 8);
}

// Block by block, each of the group's rows in turn (a group's rows are contiguous, so this
// stays in cache), a word at a time. Rows past the matrix are zero values with zero scales.
void pack_group(const WeightMatrix& w, int64_t g, std::byte* out) {
  const int64_t nb = w.cols / kQK8_0;
  const bool q8 = w.type == GgmlType::Q8_0;
  const bool q5 = kernels::has_fifth_bits(w.type), mins = kernels::has_block_min(w.type);
  const size_t block_bytes = ggml_type_traits(w.type).block_bytes;
  const int words = q8 ? 8 : 4;  // per block and row
  // Where a block's fifth bits and its values begin.
  const size_t qh_at = mins ? 4 : 2, qs = 2 + (mins ? 2 : 0) + (q5 ? 4 : 0);
  const uint32_t flip = q8 ? 0x80808080u : 0;
  const uint32_t zero = q8 ? 0x80808080u : q5 || mins ? 0 : 0x88888888u;
  auto* out_words = reinterpret_cast<uint32_t*>(out);
  auto* out_scales = reinterpret_cast<uint16_t*>(out + packed_scales_offset(w.type, w.cols));
  auto* out_mins = reinterpret_cast<uint16_t*>(out + packed_mins_offset(w.type, w.cols));
  auto* out_masks = reinterpret_cast<uint64_t*>(out + packed_masks_offset(w.cols));
  for (int64_t b = 0; b < nb; ++b) {
    uint64_t masks[4][2][2] = {};  // Q5_0, Q5_1: [word][half][low, high nibbles]
    for (int64_t i = 0; i < kPackedRows; ++i) {
      const int64_t r = g * kPackedRows + i;
      uint32_t* dst = out_words + (b * words * kPackedRows + i);
      uint16_t d = 0, m = 0;
      uint32_t qh = mins ? 0 : 0xFFFFFFFF;  // Q5_0's zero: 16 - 16
      if (r < w.rows) {
        const std::byte* blk = w.data + r * w.row_bytes + b * block_bytes;
        std::memcpy(&d, blk, 2);
        if (mins) std::memcpy(&m, blk + 2, 2);
        if (q5) std::memcpy(&qh, blk + qh_at, 4);
        for (int k = 0; k < words; ++k) {
          uint32_t v;
          std::memcpy(&v, blk + qs + 4 * k, 4);
          dst[k * kPackedRows] = v ^ flip;
        }
      } else {
        for (int k = 0; k < words; ++k) dst[k * kPackedRows] = zero;
      }
      out_scales[b * kPackedRows + i] = d;
      if (mins) out_mins[b * kPackedRows + i] = m;
      if (q5)
        for (int k = 0; k < 4; ++k)
          for (int high = 0; high < 2; ++high)
            masks[k][i / 16][high] |= uint64_t{(qh >> (4 * k + 16 * high)) & 0xF} << (i % 16 * 4);
    }
    if (q5) std::memcpy(out_masks + b * 16, masks, sizeof masks);
  }
}

// Q4_K or Q5_K, block by block as pack_group: the words, then the unpacked scales and mins, d
// and dmin (zero for rows past the matrix), and Q5_K's fifth bits as masks: word k's bytes
// 4k..4k+3 of qs are values l of sub-blocks 2c (low nibbles) and 2c + 1 (high ones), l = 4k %
// 32 + j and c = k / 8, whose fifth bits are bits 2c and 2c + 1 of qh[l].
template <typename Block>
void pack_group_q45_k(const WeightMatrix& w, int64_t g, std::byte* out) {
  constexpr bool kFiveBit = std::is_same_v<Block, BlockQ5_K>;
  const int64_t packed_bytes = kernels::packed_q45_k_bytes(w.type);
  for (int64_t b = 0; b < w.cols / kQK_K; ++b) {
    std::byte* blk_out = out + b * packed_bytes;
    auto* words = reinterpret_cast<uint32_t*>(blk_out);
    auto* scales = reinterpret_cast<uint8_t*>(blk_out + kernels::kQ4kScalesAt);
    auto* mins = reinterpret_cast<uint8_t*>(blk_out + kernels::kQ4kMinsAt);
    auto* d = reinterpret_cast<uint16_t*>(blk_out + kernels::kQ4kDAt);
    auto* dmin = reinterpret_cast<uint16_t*>(blk_out + kernels::kQ4kDminAt);
    uint64_t masks[32][2][2] = {};  // Q5_K: [word][half][low, high nibbles]
    for (int64_t i = 0; i < kPackedRows; ++i) {
      const int64_t r = g * kPackedRows + i;
      Block blk{};  // all zero past the matrix: zero values, scales, mins, d and dmin
      if (r < w.rows) std::memcpy(&blk, w.data + r * w.row_bytes + b * sizeof(Block), sizeof blk);
      for (int k = 0; k < 32; ++k) std::memcpy(&words[k * kPackedRows + i], blk.qs + 4 * k, 4);
      for (int j = 0; j < 8; ++j)
        k_scale_min(j, blk.scales, scales[j * kPackedRows + i], mins[j * kPackedRows + i]);
      d[i] = blk.d;
      dmin[i] = blk.dmin;
      if constexpr (kFiveBit)
        for (int k = 0; k < 32; ++k) {
          uint32_t qh;
          std::memcpy(&qh, blk.qh + 4 * k % 32, 4);
          for (int high = 0; high < 2; ++high) {
            // The bit of each of the 4 bytes, gathered into a nibble by one multiply (the
            // partial products below bit 24 never carry into it).
            const uint32_t bits = (qh >> (2 * (k / 8) + high)) & 0x01010101u;
            masks[k][i / 16][high] |= uint64_t{((bits * 0x01020408u) >> 24) & 0xF} << (i % 16 * 4);
          }
        }
    }
    if constexpr (kFiveBit) std::memcpy(blk_out + kernels::kQ5kMasksAt, masks, sizeof masks);
  }
}

// IQ4_XS, super-block by super-block: each sub-block's words as IQ4_NL's block's, its scale
// ls - 32 as a byte, and d (zero past the matrix, whose scales are then -32).
void pack_group_iq4_xs(const WeightMatrix& w, int64_t g, std::byte* out) {
  auto* words = reinterpret_cast<uint32_t*>(out);
  auto* scales = reinterpret_cast<int8_t*>(out + packed_scales_offset(w.type, w.cols));
  auto* d = reinterpret_cast<uint16_t*>(out + kernels::packed_xs_d_offset(w.cols));
  for (int64_t b = 0; b < w.cols / kQK_K; ++b)
    for (int64_t i = 0; i < kPackedRows; ++i) {
      const int64_t r = g * kPackedRows + i;
      BlockIq4Xs blk{};
      if (r < w.rows)
        std::memcpy(&blk, w.data + r * w.row_bytes + b * sizeof(BlockIq4Xs), sizeof blk);
      d[b * kPackedRows + i] = blk.d;
      for (int64_t s = 0; s < kQK_K / kQK8_0; ++s) {
        const int64_t sub = b * (kQK_K / kQK8_0) + s;
        scales[sub * kPackedRows + i] = static_cast<int8_t>(iq4_xs_scale(blk, static_cast<int>(s)));
        for (int k = 0; k < 4; ++k)
          std::memcpy(&words[(sub * 4 + k) * kPackedRows + i], blk.qs + 16 * s + 4 * k, 4);
      }
    }
}

// Q6_K, block by block: the words of ql and of qh, the scales and d (zero past the matrix).
void pack_group_q6_k(const WeightMatrix& w, int64_t g, std::byte* out) {
  for (int64_t b = 0; b < w.cols / kQK_K; ++b) {
    std::byte* blk_out = out + b * kernels::kQ6kPackedBytes;
    auto* low = reinterpret_cast<uint32_t*>(blk_out);
    auto* high = reinterpret_cast<uint32_t*>(blk_out + kernels::kQ6kHighAt);
    auto* scales = reinterpret_cast<int8_t*>(blk_out + kernels::kQ6kScalesAt);
    auto* d = reinterpret_cast<uint16_t*>(blk_out + kernels::kQ6kDAt);
    for (int64_t i = 0; i < kPackedRows; ++i) {
      const int64_t r = g * kPackedRows + i;
      BlockQ6_K blk{};
      if (r < w.rows)
        std::memcpy(&blk, w.data + r * w.row_bytes + b * sizeof(BlockQ6_K), sizeof blk);
      for (int k = 0; k < 32; ++k) std::memcpy(&low[k * kPackedRows + i], blk.ql + 4 * k, 4);
      for (int k = 0; k < 16; ++k) std::memcpy(&high[k * kPackedRows + i], blk.qh + 4 * k, 4);
      for (int j = 0; j < 16; ++j) scales[j * kPackedRows + i] = blk.scales[j];
      d[i] = blk.d;
    }
  }
}

// Q2_K or Q3_K, block by block: the words of qs (and of Q3_K's hmask), the scale bytes, d and
// Q2_K's dmin, all as stored (zero past the matrix).
template <typename Block>
void pack_group_q23_k(const WeightMatrix& w, int64_t g, std::byte* out) {
  constexpr bool kThreeBit = std::is_same_v<Block, BlockQ3_K>;
  constexpr int64_t kBytes = kThreeBit ? kernels::kQ3kPackedBytes : kernels::kQ2kPackedBytes;
  constexpr int64_t kScalesAt = kThreeBit ? kernels::kQ3kScalesAt : kernels::kQ2kScalesAt;
  constexpr int64_t kDAt = kThreeBit ? kernels::kQ3kDAt : kernels::kQ2kDAt;
  constexpr int kScaleBytes = sizeof(Block{}.scales);
  for (int64_t b = 0; b < w.cols / kQK_K; ++b) {
    std::byte* blk_out = out + b * kBytes;
    auto* scales = reinterpret_cast<uint8_t*>(blk_out + kScalesAt);
    auto* d = reinterpret_cast<uint16_t*>(blk_out + kDAt);
    for (int64_t i = 0; i < kPackedRows; ++i) {
      const int64_t r = g * kPackedRows + i;
      Block blk{};
      if (r < w.rows) std::memcpy(&blk, w.data + r * w.row_bytes + b * sizeof(Block), sizeof blk);
      for (int k = 0; k < 16; ++k)
        std::memcpy(blk_out + kernels::q23_k_qs_word_at(w.type, k) + 4 * i, blk.qs + 4 * k, 4);
      for (int j = 0; j < kScaleBytes; ++j) scales[j * kPackedRows + i] = blk.scales[j];
      d[i] = blk.d;
      if constexpr (kThreeBit) {
        for (int k = 0; k < 8; ++k)
          std::memcpy(blk_out + kernels::q3_k_hmask_word_at(k) + 4 * i, blk.hmask + 4 * k, 4);
      } else {
        reinterpret_cast<uint16_t*>(blk_out + kernels::kQ2kDminAt)[i] = blk.dmin;
      }
    }
  }
}

// Row i of a packed Q2_K or Q3_K group, super-block b, as the file stores it.
template <typename Block>
Block packed_q23_k_block(const std::byte* group, int64_t b, int64_t i) {
  constexpr bool kThreeBit = std::is_same_v<Block, BlockQ3_K>;
  const std::byte* blk =
      group + b * (kThreeBit ? kernels::kQ3kPackedBytes : kernels::kQ2kPackedBytes);
  constexpr GgmlType kType = kThreeBit ? GgmlType::Q3_K : GgmlType::Q2_K;
  Block out;
  for (int k = 0; k < 16; ++k)
    std::memcpy(out.qs + 4 * k, blk + kernels::q23_k_qs_word_at(kType, k) + 4 * i, 4);
  const int64_t scales_at = kThreeBit ? kernels::kQ3kScalesAt : kernels::kQ2kScalesAt;
  for (size_t j = 0; j < sizeof out.scales; ++j)
    out.scales[j] =
        static_cast<uint8_t>(blk[scales_at + static_cast<int64_t>(j) * kPackedRows + i]);
  std::memcpy(&out.d, blk + (kThreeBit ? kernels::kQ3kDAt : kernels::kQ2kDAt) + 2 * i, 2);
  if constexpr (kThreeBit) {
    for (int k = 0; k < 8; ++k)
      std::memcpy(out.hmask + 4 * k, blk + kernels::q3_k_hmask_word_at(k) + 4 * i, 4);
  } else {
    std::memcpy(&out.dmin, blk + kernels::kQ2kDminAt + 2 * i, 2);
  }
  return out;
}

}  // namespace

void matmul_pack(const WeightMatrix& w, std::byte* out, ThreadPool& pool) {
  validate(w);
  if (!kernels::packed_type(w.type))
    throw std::invalid_argument("matmul_pack: weights of type " +
                                std::string(ggml_type_name(w.type)) + " are not packed");
  const int64_t groups = (w.rows + kPackedRows - 1) / kPackedRows;
  const auto group_bytes = static_cast<size_t>(kernels::packed_group_bytes(w.type, w.cols));
  pool.parallel_for(groups, [&](int64_t g0, int64_t g1, int) {
    for (int64_t g = g0; g < g1; ++g) {
      std::byte* group = out + static_cast<size_t>(g) * group_bytes;
      if (w.type == GgmlType::Q4_K)
        pack_group_q45_k<BlockQ4_K>(w, g, group);
      else if (w.type == GgmlType::Q5_K)
        pack_group_q45_k<BlockQ5_K>(w, g, group);
      else if (w.type == GgmlType::Q6_K)
        pack_group_q6_k(w, g, group);
      else if (w.type == GgmlType::IQ4_XS)
        pack_group_iq4_xs(w, g, group);
      else if (w.type == GgmlType::Q2_K)
        pack_group_q23_k<BlockQ2_K>(w, g, group);
      else if (w.type == GgmlType::Q3_K)
        pack_group_q23_k<BlockQ3_K>(w, g, group);
      else
        pack_group(w, g, group);
    }
  });
}

void matmul_packed_row(const WeightMatrix& w, int64_t r, float* out) {
  const std::byte* group =
      w.packed + (r / kPackedRows) * kernels::packed_group_bytes(w.type, w.cols);
  const int64_t i = r % kPackedRows;
  if (w.type == GgmlType::Q2_K || w.type == GgmlType::Q3_K) {
    // Each super-block reassembled as the file stores it, then dequantized as the file's.
    for (int64_t b = 0; b < w.cols / kQK_K; ++b) {
      if (w.type == GgmlType::Q2_K) {
        const BlockQ2_K blk = packed_q23_k_block<BlockQ2_K>(group, b, i);
        dequantize_row(w.type, reinterpret_cast<const std::byte*>(&blk), out + b * kQK_K, kQK_K);
      } else {
        const BlockQ3_K blk = packed_q23_k_block<BlockQ3_K>(group, b, i);
        dequantize_row(w.type, reinterpret_cast<const std::byte*>(&blk), out + b * kQK_K, kQK_K);
      }
    }
    return;
  }
  if (w.type == GgmlType::Q6_K) {
    // Each stored byte of ql and qh read back from its word, in the order of dequantize_row.
    for (int64_t b = 0; b < w.cols / kQK_K; ++b) {
      const std::byte* blk = group + b * kernels::kQ6kPackedBytes;
      auto byte_of = [&](int64_t at, int k) {
        return static_cast<uint8_t>(blk[at + (k / 4 * kPackedRows + i) * 4 + k % 4]);
      };
      uint16_t h;
      std::memcpy(&h, blk + kernels::kQ6kDAt + 2 * i, 2);
      const float d = fp16_to_fp32(h);
      auto sc = [&](int j) {
        return static_cast<int8_t>(blk[kernels::kQ6kScalesAt + j * kPackedRows + i]);
      };
      for (int n = 0; n < 2; ++n) {
        float* y = out + b * kQK_K + 128 * n;
        for (int l = 0; l < 32; ++l) {
          const uint8_t ql0 = byte_of(0, 64 * n + l), ql1 = byte_of(0, 64 * n + l + 32);
          const uint8_t qh = byte_of(kernels::kQ6kHighAt, 32 * n + l);
          const int is = 8 * n + l / 16;
          const int q1 = ((ql0 & 0xF) | (((qh >> 0) & 3) << 4)) - 32;
          const int q2 = ((ql1 & 0xF) | (((qh >> 2) & 3) << 4)) - 32;
          const int q3 = ((ql0 >> 4) | (((qh >> 4) & 3) << 4)) - 32;
          const int q4 = ((ql1 >> 4) | (((qh >> 6) & 3) << 4)) - 32;
          y[l + 0] = d * sc(is + 0) * q1;
          y[l + 32] = d * sc(is + 2) * q2;
          y[l + 64] = d * sc(is + 4) * q3;
          y[l + 96] = d * sc(is + 6) * q4;
        }
      }
    }
    return;
  }
  if (w.type == GgmlType::Q4_K || w.type == GgmlType::Q5_K) {
    // In the order of dequantize_row: per pair of sub-blocks, their scales and mins, then the
    // low nibbles of its 32 bytes and the high ones (with Q5_K's fifth bits).
    const bool five = w.type == GgmlType::Q5_K;
    for (int64_t b = 0; b < w.cols / kQK_K; ++b) {
      const std::byte* blk = group + b * kernels::packed_q45_k_bytes(w.type);
      auto u8 = [&](int64_t at) { return static_cast<uint8_t>(blk[at]); };
      uint16_t h;
      std::memcpy(&h, blk + kernels::kQ4kDAt + 2 * i, 2);
      const float d = fp16_to_fp32(h);
      std::memcpy(&h, blk + kernels::kQ4kDminAt + 2 * i, 2);
      const float dmin = fp16_to_fp32(h);
      for (int c = 0; c < 4; ++c) {
        const float d1 = d * u8(kernels::kQ4kScalesAt + (2 * c) * kPackedRows + i);
        const float m1 = dmin * u8(kernels::kQ4kMinsAt + (2 * c) * kPackedRows + i);
        const float d2 = d * u8(kernels::kQ4kScalesAt + (2 * c + 1) * kPackedRows + i);
        const float m2 = dmin * u8(kernels::kQ4kMinsAt + (2 * c + 1) * kPackedRows + i);
        float* o = out + b * kQK_K + 64 * c;
        for (int l = 0; l < 32; ++l) {
          const int64_t k = 8 * c + l / 4;
          const uint8_t q = u8((k * kPackedRows + i) * 4 + l % 4);
          int lo = q & 0xF, hi = q >> 4;
          if (five) {
            uint64_t masks[2];
            std::memcpy(masks, blk + kernels::kQ5kMasksAt + ((k * 2 + i / 16) * 2) * 8, 16);
            const int bit = static_cast<int>(i % 16 * 4 + l % 4);
            lo += 16 * static_cast<int>((masks[0] >> bit) & 1);
            hi += 16 * static_cast<int>((masks[1] >> bit) & 1);
          }
          o[l] = d1 * lo - m1;
          o[l + 32] = d2 * hi - m2;
        }
      }
    }
    return;
  }
  const size_t scales = packed_scales_offset(w.type, w.cols);
  const size_t mins_at = packed_mins_offset(w.type, w.cols);
  const bool q8 = w.type == GgmlType::Q8_0;
  const bool q5 = kernels::has_fifth_bits(w.type), mins = kernels::has_block_min(w.type);
  const int offset = kernels::packed_stored_offset(w.type);
  const bool xs = w.type == GgmlType::IQ4_XS, grid = w.type == GgmlType::IQ4_NL || xs;
  for (int64_t b = 0; b < w.cols / kQK8_0; ++b) {
    uint16_t h;
    float d;
    if (xs) {  // a sub-block's d * (ls - 32), as dequantize_row computes it
      std::memcpy(&h,
                  group + kernels::packed_xs_d_offset(w.cols) +
                      static_cast<size_t>((b / (kQK_K / kQK8_0) * kPackedRows + i) * 2),
                  2);
      d = fp16_to_fp32(h) *
          static_cast<int8_t>(group[scales + static_cast<size_t>(b * kPackedRows + i)]);
    } else {
      std::memcpy(&h, group + scales + static_cast<size_t>((b * kPackedRows + i) * 2), 2);
      d = fp16_to_fp32(h);
    }
    float m = 0.0f;
    if (mins) {
      std::memcpy(&h, group + mins_at + static_cast<size_t>((b * kPackedRows + i) * 2), 2);
      m = fp16_to_fp32(h);
    }
    float* o = out + b * kQK8_0;
    for (int64_t k = 0; k < (q8 ? kQK8_0 : 16); k += 4) {
      uint8_t v[4];
      std::memcpy(v, group + packed_word_offset(w.type, b * kQK8_0 + k, i), 4);
      uint64_t lo_bits = 0, hi_bits = 0;
      if (q5) {
        std::memcpy(&lo_bits, group + packed_mask_offset(w.cols, b, k / 4, i, false), 8);
        std::memcpy(&hi_bits, group + packed_mask_offset(w.cols, b, k / 4, i, true), 8);
      }
      for (int j = 0; j < 4; ++j) {
        if (q8) {
          o[k + j] = d * static_cast<float>(static_cast<int>(v[j]) - 128);
        } else {
          const int shift = static_cast<int>(i % 16 * 4 + j);
          const int lo = (v[j] & 0xF) + (q5 ? 16 * static_cast<int>((lo_bits >> shift) & 1) : 0);
          const int hi = (v[j] >> 4) + (q5 ? 16 * static_cast<int>((hi_bits >> shift) & 1) : 0);
          // As dequantize_row computes them.
          if (mins) {
            o[k + j] = lo * d + m;
            o[k + j + 16] = hi * d + m;
          } else if (grid) {
            o[k + j] = d * kIq4nlValues[lo];
            o[k + j + 16] = d * kIq4nlValues[hi];
          } else {
            o[k + j] = (lo - offset) * d;
            o[k + j + 16] = (hi - offset) * d;
          }
        }
      }
    }
  }
}

void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  validate(w);
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, w.data + r * w.row_bytes, row.data(), w.cols);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * w.cols;
      double sum = 0.0;
      for (int64_t k = 0; k < w.cols; ++k) sum += static_cast<double>(row[k]) * xt[k];
      y[t * w.rows + r] = static_cast<float>(sum);
    }
  }
}

}  // namespace ghostline::engine::cpu
