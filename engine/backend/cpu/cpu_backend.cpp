// The CPU backend: the forward pass of reference_forward.cpp batched over n tokens on the
// fast kernels (quantized-activation matrix products split across the thread pool), with
// float32 activations and attention reading F16 K/V through the block table.
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "base/platform.h"
#include "engine/backend/backend.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/backend/cpu/thread_pool.h"
#include "engine/backend/cpu/vec_ops.h"
#include "engine/gguf/quant.h"
#include "engine/model/model.h"
#include "engine/model/model_weights.h"

namespace ghostline::engine {
namespace {

constexpr int kB = KvBlockPool::kBlockTokens;
static_assert(kB == cpu::kAttnRows, "a pool block's keys of a head are one panel for attention");
static_assert(cpu::kAttnKeys % kB == 0, "attention takes keys whole pool blocks at a time");

cpu::WeightMatrix as_matrix(const GgufTensor* t) {
  return {.type = t->type,
          .rows = t->shape[1],
          .cols = t->shape[0],
          .data = t->data,
          .row_bytes = ggml_row_bytes(t->type, t->shape[0])};
}

const float* f32_data(const GgufTensor* t) {
  return reinterpret_cast<const float*>(t->data);
}

struct LayerMatrices {
  cpu::WeightMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Model& model, KvBlockPool& pool, const BackendOptions& options)
      : model_(model),
        kv_(pool),
        threads_(options.threads),
        max_batch_(options.max_batch_tokens),
        compute_owner_(options.cpu_threads && options.cpu_threads->size() == options.threads
                           ? options.cpu_threads
                           : std::make_shared<cpu::ThreadPool>(options.threads)),
        compute_(*compute_owner_),
        ops_(cpu::vec_ops()) {
    const ModelConfig& c = model.config();
    const ModelWeights& w = model.weights();
    for (const LayerWeights& l : w.layers)
      layers_.push_back({as_matrix(l.wq), as_matrix(l.wk), as_matrix(l.wv), as_matrix(l.wo),
                         l.w_gate ? as_matrix(l.w_gate) : cpu::WeightMatrix{}, as_matrix(l.w_up),
                         as_matrix(l.w_down)});
    output_ = as_matrix(w.output);
    pack_weights(model);
    // RoPE frequencies per pair of dimensions, in double: theta_i = scale * base^(-2i/d).
    inv_freq_.resize(size_t(c.head_dim / 2));
    for (int i = 0; i < c.head_dim / 2; ++i)
      inv_freq_[size_t(i)] =
          double(c.rope_freq_scale) * std::pow(double(c.rope_theta), -2.0 * i / c.head_dim);
    const size_t B = size_t(max_batch_);
    x_.resize(B * c.n_embd);
    xb_.resize(B * std::max(c.n_embd, c.q_dim()));
    q_.resize(B * c.q_dim());
    k_.resize(B * c.kv_dim());
    v_.resize(B * c.kv_dim());
    att_.resize(B * c.q_dim());
    gate_.resize(B * c.n_ff);
    up_.resize(B * c.n_ff);
    proj_.resize(B * c.n_embd);
    rope_cos_.resize(B * inv_freq_.size());
    rope_sin_.resize(B * inv_freq_.size());
    scratch_.resize(size_t(compute_.size()));
    kv_row_.resize(size_t(c.kv_dim()));
  }

  std::string_view name() const override { return "cpu"; }
  std::shared_ptr<cpu::ThreadPool> cpu_threads() const override { return compute_owner_; }
  int threads() const override { return threads_; }
  // A batch that asks for the logits of up to kMatmulDecodeMaxTokens tokens goes through the
  // decode kernels, which give each token the sums of a single step and read each weight once
  // for several tokens. Each extra token costs about 0.12 of a step: measured on the shipped
  // pair with 2 threads (BM_SpeculativeForwardCost in tests/engine/speculative_bench.cpp: 8
  // tokens 1.75x one), and on all products of the 0.5B shape for the packed types
  // (ghostline-matmul-bench --batch: 5 tokens 1.26x one at Q8_0, 1.4-1.5x at 4 and 5 bits;
  // ghostline bench --speculative, a forward of 16 tokens: 2.2x one step at Q8_0, 2.8-2.9x at
  // Q4_K_M and IQ4_XS).
  VerifyCost verify_cost() const override {
    return {.max_tokens = static_cast<int>(cpu::kMatmulDecodeMaxTokens), .per_token = 0.12};
  }
  // Measured on the shipped pair with 2 threads (BM_SpeculativeForwardCost in
  // tests/engine/speculative_bench.cpp): a draft step costs about 0.06 of a target step (66 us
  // against 1.10 ms); catching the draft up costs about 0.02 per token (32 tokens in 0.72 ms).
  // A larger draft is timed on its first forwards (SpeculationCosts).
  DraftCost draft_cost() const override { return {.step = 0.06, .catch_up_per_token = 0.02}; }

  bool forward(const ForwardBatch& batch, std::span<float> logits) override {
    // Batches larger than the scratch are run in slices; attention is causal, so a slice
    // only needs the KV the previous slices wrote.
    const int n_total = static_cast<int>(batch.tokens.size());
    const int first_logit = n_total - batch.n_logits;
    const size_t n_vocab = size_t(model_.config().n_vocab);
    for (int s = 0; s < n_total; s += max_batch_) {
      const int e = std::min(n_total, s + max_batch_);
      const int wanted_from = std::max(s, first_logit);
      const int n_wanted = std::max(0, e - wanted_from);
      ForwardBatch slice{.tokens = batch.tokens.subspan(size_t(s), size_t(e - s)),
                         .start_pos = batch.start_pos + s,
                         .blocks = batch.blocks,
                         .n_logits = n_wanted,
                         .cancel = batch.cancel};
      std::span<float> out;
      if (n_wanted > 0)
        out =
            logits.subspan(size_t(wanted_from - first_logit) * n_vocab, size_t(n_wanted) * n_vocab);
      if (!forward_slice(slice, out)) return false;
    }
    return true;
  }

  bool forward_greedy(const ForwardBatch& batch, std::span<int32_t> tokens) override {
    return forward_greedy_on_host(*this, model_.config().n_vocab, batch, tokens, greedy_logits_);
  }

 private:
  bool forward_slice(const ForwardBatch& batch, std::span<float> logits) {
    const ModelConfig& c = model_.config();
    const ModelWeights& w = model_.weights();
    const int n = static_cast<int>(batch.tokens.size());
    const int E = c.n_embd, Q = c.q_dim(), KV = c.kv_dim(), F = c.n_ff;
    // Logits of several tokens are asked for to compare each with what a single step gives
    // (speculative verification); a prompt's tokens may be computed together.
    const cpu::Tokens mode = batch.n_logits > 1 ? cpu::Tokens::kSteps : cpu::Tokens::kBatch;

    const size_t embd_row_bytes = ggml_row_bytes(w.token_embd->type, E);
    // A tied output matrix that was packed has let go of the file's copy of the table.
    const bool packed_embd = w.output == w.token_embd && output_.packed != nullptr;
    for (int t = 0; t < n; ++t) {
      if (packed_embd) {
        cpu::matmul_packed_row(output_, batch.tokens[t], &x_[size_t(t) * E]);
        continue;
      }
      gguf::dequantize_row(w.token_embd->type,
                           w.token_embd->data + size_t(batch.tokens[t]) * embd_row_bytes,
                           &x_[size_t(t) * E], E);
    }
    if (c.embd_scale != 1.0f) ops_.scale(x_.data(), int64_t(n) * E, c.embd_scale);
    fill_rope_table(batch.start_pos, n);

    for (int l = 0; l < c.n_layer; ++l) {
      if (l > 0 && batch.cancel && batch.cancel->load(std::memory_order_relaxed)) return false;
      const LayerWeights& lw = w.layers[size_t(l)];
      const LayerMatrices& lm = layers_[size_t(l)];
      for (int t = 0; t < n; ++t)
        norm(&x_[size_t(t) * E], lw.attn_norm, lw.attn_norm_b, &xb_[size_t(t) * E]);
      {
        const cpu::WeightMatrix* ws[] = {&lm.wq, &lm.wk, &lm.wv};
        float* const ys[] = {q_.data(), k_.data(), v_.data()};
        cpu::matmul_shared_input(ws, xb_.data(), n, ys, compute_, mode);
      }
      for (int t = 0; t < n; ++t) {
        float* q = &q_[size_t(t) * Q];
        float* k = &k_[size_t(t) * KV];
        float* v = &v_[size_t(t) * KV];
        if (lw.bq) ops_.add(q, f32_data(lw.bq), Q, q);
        if (lw.bk) ops_.add(k, f32_data(lw.bk), KV, k);
        if (lw.bv) ops_.add(v, f32_data(lw.bv), KV, v);
        rope(q, c.n_head, t);
        rope(k, c.n_head_kv, t);
        store_kv(batch, l, batch.start_pos + t, k, v);
      }
      attention(batch, l);
      cpu::matmul(lm.wo, att_.data(), n, proj_.data(), compute_, mode);
      add_bias(proj_.data(), lw.bo, n);
      ops_.add(x_.data(), proj_.data(), int64_t(n) * E, x_.data());

      for (int t = 0; t < n; ++t)
        norm(&x_[size_t(t) * E], lw.ffn_norm, lw.ffn_norm_b, &xb_[size_t(t) * E]);
      {
        const cpu::WeightMatrix* ws[] = {&lm.w_up, &lm.w_gate};
        float* const ys[] = {up_.data(), gate_.data()};
        const size_t count = c.ffn == FfnKind::Gelu ? 1 : 2;  // Gelu has no gate
        cpu::matmul_shared_input(std::span(ws, count), xb_.data(), n, std::span(ys, count),
                                 compute_, mode);
      }
      add_bias(up_.data(), lw.b_up, n);
      // Per token: with F not a multiple of the vector width, one call over all tokens would
      // put some of a token's values in the scalar tail, and its result would depend on the
      // batch (speculative verification must reproduce single steps bit for bit).
      for (int t = 0; t < n; ++t) {
        float* up = &up_[size_t(t) * F];
        switch (c.ffn) {
          case FfnKind::SwiGlu:
            ops_.silu_mul(&gate_[size_t(t) * F], up, F, up);
            break;
          case FfnKind::GeGlu:
            ops_.gelu_mul(&gate_[size_t(t) * F], up, F, up);
            break;
          case FfnKind::Gelu:
            ops_.gelu(up, F, up);
            break;
        }
      }
      cpu::matmul(lm.w_down, up_.data(), n, proj_.data(), compute_, mode);
      add_bias(proj_.data(), lw.b_down, n);
      ops_.add(x_.data(), proj_.data(), int64_t(n) * E, x_.data());
    }

    if (batch.n_logits == 0) return true;
    const int first = n - batch.n_logits;
    for (int t = 0; t < batch.n_logits; ++t)
      norm(&x_[size_t(first + t) * E], w.output_norm, w.output_norm_b, &xb_[size_t(t) * E]);
    cpu::matmul(output_, xb_.data(), batch.n_logits, logits.data(), compute_, mode);
    return true;
  }

  // The model's norm (RMSNorm or LayerNorm) of one token's residual.
  void norm(const float* x, const GgufTensor* weight, const GgufTensor* bias, float* out) const {
    const ModelConfig& c = model_.config();
    if (c.norm == NormKind::Layer)
      ops_.layernorm(x, f32_data(weight), bias ? f32_data(bias) : nullptr, c.n_embd, c.rms_eps,
                     out);
    else
      ops_.rmsnorm(x, f32_data(weight), c.n_embd, c.rms_eps, out);
  }

  // Adds `bias` (when the model has one) to each of n rows of its length.
  void add_bias(float* rows, const GgufTensor* bias, int n) const {
    if (!bias) return;
    const int64_t len = bias->shape[0];
    for (int t = 0; t < n; ++t) ops_.add(rows + t * len, f32_data(bias), len, rows + t * len);
  }

  void fill_rope_table(int start_pos, int n) {
    const size_t half = inv_freq_.size();
    for (int t = 0; t < n; ++t)
      for (size_t i = 0; i < half; ++i) {
        const double theta = double(start_pos + t) * inv_freq_[i];
        rope_cos_[size_t(t) * half + i] = static_cast<float>(std::cos(theta));
        rope_sin_[size_t(t) * half + i] = static_cast<float>(std::sin(theta));
      }
  }

  void rope(float* v, int n_heads, int t) const {
    const ModelConfig& c = model_.config();
    const int d = c.head_dim, half = d / 2;
    const float* cs = &rope_cos_[size_t(t) * size_t(half)];
    const float* sn = &rope_sin_[size_t(t) * size_t(half)];
    for (int h = 0; h < n_heads; ++h) {
      float* head = v + h * d;
      for (int i = 0; i < half; ++i) {
        const int a = c.rope_neox ? i : 2 * i;
        const int b = c.rope_neox ? i + half : 2 * i + 1;
        const float x0 = head[a], x1 = head[b];
        head[a] = x0 * cs[i] - x1 * sn[i];
        head[b] = x0 * sn[i] + x1 * cs[i];
      }
    }
  }

  // A layer's keys and values of a pool block, as this backend lays them out: per KV head, its
  // keys transposed ([dimension][position], the panel attn_block takes) followed by its
  // values as rows ([position][dimension]), 2 * kB * head_dim values a head. Attention reads a
  // head's keys and values of a block as one run, from blocks scattered over the pool.
  uint16_t* head_kv(BlockId id, int layer, int head) const {
    const size_t head_kv_values = size_t(2 * kB) * size_t(model_.config().head_dim);
    return kv_.layer_kv(id, layer) + size_t(head) * head_kv_values;
  }

  void store_kv(const ForwardBatch& batch, int layer, int pos, const float* k, const float* v) {
    const BlockId id = batch.blocks[size_t(pos / kB)];
    const int KV = kv_.kv_dim(), d = model_.config().head_dim, r = pos % kB;
    ops_.fp32_to_fp16(k, KV, kv_row_.data());
    for (int h = 0; h < KV / d; ++h) {
      uint16_t* kd = head_kv(id, layer, h);
      for (int i = 0; i < d; ++i) kd[size_t(i) * kB + size_t(r)] = kv_row_[size_t(h * d + i)];
      ops_.fp32_to_fp16(v + size_t(h) * d, d, kd + (size_t(kB) + size_t(r)) * d);
    }
  }

  // Packs the matrices the active kernel level reads packed (cpu::matmul_pack) into one
  // arena, and lets go of the file's pages of each a slice of rows at a time, so that the
  // weights are resident once, even while packing; the arena is locked where the file was.
  void pack_weights(const Model& model) {
    constexpr int64_t kSliceBytes = 8 << 20;
    const cpu::CpuIsa isa = cpu::active_isa();
    std::vector<cpu::WeightMatrix*> todo;
    for (LayerMatrices& l : layers_)
      for (cpu::WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
        if (m->data != nullptr && cpu::matmul_packs(*m, isa)) todo.push_back(m);
    if (output_.data != nullptr && cpu::matmul_packs(output_, isa)) todo.push_back(&output_);
    auto padded = [](size_t bytes) { return (bytes + 63) / 64 * 64; };
    size_t total = 0;
    for (const cpu::WeightMatrix* m : todo) total += padded(cpu::matmul_packed_bytes(*m));
    if (total == 0) return;
    packed_ = PackedArena(total);
    const GgufFile& file = model.file();
    std::byte* out = packed_.data();
    for (cpu::WeightMatrix* m : todo) {
      const int64_t slice_rows =
          std::max<int64_t>(1, kSliceBytes / int64_t(cpu::kPackedRows * m->row_bytes)) *
          cpu::kPackedRows;
      for (int64_t r = 0; r < m->rows; r += slice_rows) {
        cpu::WeightMatrix slice = *m, before = *m;
        slice.rows = std::min(slice_rows, m->rows - r);
        slice.data = m->data + size_t(r) * m->row_bytes;
        before.rows = r;  // a multiple of kPackedRows: where the slice's groups begin
        cpu::matmul_pack(slice, out + cpu::matmul_packed_bytes(before), compute_);
        file.release(slice.data, size_t(slice.rows) * m->row_bytes);
      }
      m->packed = out;
      out += padded(cpu::matmul_packed_bytes(*m));
    }
    if (file.locked()) platform::lock_resident(packed_.data(), total);  // as the file: best effort
  }

  // Anonymous memory for packed weights, in 2 MiB pages where the kernel allows them: decode
  // streams all of it every token, and fewer pages mean fewer TLB misses (and fewer faults
  // while packing).
  class PackedArena {
   public:
    PackedArena() = default;
    explicit PackedArena(size_t bytes) : bytes_(bytes + kHugePage) {
      void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      mapping_ = p;
      const auto start = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
      data_ = reinterpret_cast<std::byte*>(start);
      platform::advise_huge_pages(data_, bytes);
    }
    PackedArena(const PackedArena&) = delete;
    PackedArena& operator=(PackedArena&& o) noexcept {
      std::swap(mapping_, o.mapping_);
      std::swap(bytes_, o.bytes_);
      std::swap(data_, o.data_);
      return *this;
    }
    ~PackedArena() {
      if (mapping_ != nullptr) ::munmap(mapping_, bytes_);
    }
    std::byte* data() const { return data_; }

   private:
    static constexpr size_t kHugePage = size_t{2} << 20;
    void* mapping_ = nullptr;
    size_t bytes_ = 0;
    std::byte* data_ = nullptr;
  };

  // Per-thread attention scratch: the running softmax and outputs of the query rows of a tile
  // (kept here until they are done: rows of att_ that two threads write share cache lines
  // where a head's row is not a multiple of them).
  struct AttentionScratch {
    std::vector<float> max, sum, out;
  };
  static constexpr int kQueryTile = 16;
  // The keys of one part of the context in split attention: a multiple of kAttnKeys, so a
  // part is whole stretches.
  static constexpr int kSplitKeys = 4 * int(cpu::kAttnKeys);
  static_assert(cpu::kMatmulDecodeMaxTokens <= kQueryTile,
                "a verification batch is attended like single steps (attention_split)");

  // Causal grouped-query attention, kAttnKeys positions at a time with a running softmax
  // (flash attention): nothing per position of the context is kept. attn_block reads a KV
  // head's keys and values in place as F16 (widening them to floats first cost a pass that
  // waited on memory), for every query head of the group at once (n_head / n_head_kv heads
  // share a KV head, and are consecutive in q_ and att_, d apart). A query's result depends
  // only on its own position, never on the batch it is in, so a verification batch of up to
  // kQueryTile tokens equals as many single steps bit for bit.
  void attention(const ForwardBatch& batch, int layer) {
    if (batch.tokens.size() <= size_t(kQueryTile)) return attention_split(batch, layer);
    attention_tiles(batch, layer);
  }

  // The runs of KV head kvh's blocks holding positions [c0, c0 + keys) (none when keys <= 0):
  // each its keys, then its values head_block further (into value_rows, where given). Returns
  // how many there are.
  int stretch_runs(const ForwardBatch& batch, int layer, int kvh, int c0, int keys,
                   const uint16_t** panels, const uint16_t** value_rows = nullptr) const {
    const size_t head_block = size_t(kB) * size_t(model_.config().head_dim);
    int n = 0;
    for (int b0 = c0; b0 < c0 + keys; b0 += kB, ++n) {
      panels[n] = head_kv(batch.blocks[size_t(b0 / kB)], layer, kvh);
      if (value_rows) value_rows[n] = panels[n] + head_block;
    }
    return n;
  }

  // The pool's blocks are scattered, which the hardware prefetchers do not follow: the runs of
  // the stretch after the one at c0, for attn_block to ask for while it computes that one.
  int next_stretch_runs(const ForwardBatch& batch, int layer, int kvh, int c0, int n_pos_max,
                        const uint16_t** runs) const {
    const int next = c0 + int(cpu::kAttnKeys);
    return stretch_runs(batch, layer, kvh, next, std::min(int(cpu::kAttnKeys), n_pos_max - next),
                        runs);
  }

  // A query row's attention output from its running softmax: out / sum, into dst.
  void normalize_row(const float* out, float sum, float* dst) const {
    const int d = model_.config().head_dim;
    std::copy_n(out, d, dst);
    ops_.scale(dst, d, 1.0f / sum);
  }

  // A batch of more than a tile (a prompt): one task per KV head and tile of up to 16 query
  // tokens, which runs over the whole context; the tile's queries find each block in cache.
  void attention_tiles(const ForwardBatch& batch, int layer) {
    const ModelConfig& c = model_.config();
    const int n = static_cast<int>(batch.tokens.size());
    const int d = c.head_dim, group = c.n_head / c.n_head_kv, n_kv = c.n_head_kv;
    const int n_tiles = (n + kQueryTile - 1) / kQueryTile;
    const float scale = 1.0f / std::sqrt(float(d));
    // One task per claim: tiles differ in size (a batch of 24 tokens is a tile of 16 and one of
    // 8), and the full ones come first, so threads taking tasks as they finish stay balanced.
    const int64_t n_tasks = int64_t(n_tiles) * n_kv;
    compute_.parallel_for_chunks(n_tasks, n_tasks, [&](int64_t begin, int64_t end, int thread) {
      AttentionScratch& s = scratch_[size_t(thread)];
      s.max.resize(size_t(kQueryTile) * group);
      s.sum.resize(size_t(kQueryTile) * group);
      s.out.resize(size_t(kQueryTile) * group * d);
      for (int64_t task = begin; task < end; ++task) {
        const int kvh = int(task % n_kv);
        const int t0 = int(task / n_kv) * kQueryTile, t1 = std::min(n, t0 + kQueryTile);
        const int n_pos_max = batch.start_pos + t1;  // positions the last query sees
        const size_t first = (size_t(t0) * c.n_head + size_t(kvh) * group) * d;
        auto rows = [&](std::vector<float>& v, int t) {  // of q_ or att_: token t's group
          return v.data() + first + size_t(t - t0) * c.q_dim();
        };
        std::fill(s.max.begin(), s.max.end(), -INFINITY);
        std::fill(s.sum.begin(), s.sum.end(), 0.0f);
        std::fill(s.out.begin(), s.out.end(), 0.0f);
        const uint16_t* panels[cpu::kAttnKeys / kB];
        const uint16_t* value_rows[cpu::kAttnKeys / kB];
        const uint16_t* ahead[cpu::kAttnKeys / kB];
        for (int c0 = 0; c0 < n_pos_max; c0 += int(cpu::kAttnKeys)) {
          const int keys = std::min(int(cpu::kAttnKeys), n_pos_max - c0);
          int ahead_runs = next_stretch_runs(batch, layer, kvh, c0, n_pos_max, ahead);
          stretch_runs(batch, layer, kvh, c0, keys, panels, value_rows);
          for (int t = t0; t < t1; ++t) {
            const int visible = std::min(keys, batch.start_pos + t + 1 - c0);
            if (visible <= 0) continue;
            const size_t row = size_t(t - t0) * group;
            ops_.attn_block(panels, value_rows, visible, d, rows(q_, t), group, scale,
                            &s.max[row], &s.sum[row], &s.out[row * d], ahead, ahead_runs);
            ahead_runs = 0;  // asked for by the first query
          }
        }
        for (int t = t0; t < t1; ++t)
          for (int g = 0; g < group; ++g) {
            const size_t row = size_t(t - t0) * group + g;
            normalize_row(&s.out[row * d], s.sum[row], rows(att_, t) + size_t(g) * d);
          }
      }
    });
  }

  // A decode step or a verification batch (one tile): the context is cut into parts of
  // kSplitKeys positions, fixed whatever the batch and the threads (flash-decoding), and each
  // part of each KV head leaves its query rows' running softmax (max, sum, unnormalized
  // output); the parts are then combined in their order. A task is a part for every KV head,
  // a stretch of keys at a time for one head after the other: threads take tasks in runs
  // (parallel_for_balanced), so each reads one stretch of the pool, which for a sequence's
  // consecutive blocks is one stream of memory, and the work spreads over as many threads as
  // the context has parts rather than one per KV head. Where the parts are too few for the
  // threads to share evenly, a task is a part for one KV head, in the order head by head (a
  // run is then parts of one head). Either way every row gets the same bits.
  void attention_split(const ForwardBatch& batch, int layer) {
    const ModelConfig& c = model_.config();
    const int n = static_cast<int>(batch.tokens.size());
    const int d = c.head_dim, H = c.n_head, group = H / c.n_head_kv, n_kv = c.n_head_kv;
    const float scale = 1.0f / std::sqrt(float(d));
    const int n_pos_max = batch.start_pos + n;  // positions the last query sees
    const int n_parts = (n_pos_max + kSplitKeys - 1) / kSplitKeys;
    const size_t rows = size_t(n) * size_t(H);  // of a part: token t's head h is row t H + h
    if (part_out_.size() < size_t(n_parts) * rows * size_t(d)) {
      part_max_.resize(size_t(n_parts) * rows);
      part_sum_.resize(size_t(n_parts) * rows);
      part_out_.resize(size_t(n_parts) * rows * size_t(d));
    }
    const int task_heads = n_parts >= 4 * compute_.size() ? n_kv : 1;
    const int tasks_per_part = n_kv / task_heads;
    const int64_t n_tasks = int64_t(n_parts) * tasks_per_part;
    auto run = [&](int64_t i0, int64_t i1, int) {
      const uint16_t* panels[cpu::kAttnKeys / kB];
      const uint16_t* value_rows[cpu::kAttnKeys / kB];
      const uint16_t* ahead[cpu::kAttnKeys / kB];
      for (int64_t task = i0; task < i1; ++task) {
        const int part = int(task % n_parts);
        const int h0 = int(task / n_parts) * task_heads, h1 = h0 + task_heads;
        float* m = &part_max_[size_t(part) * rows];
        float* l = &part_sum_[size_t(part) * rows];
        float* out = &part_out_[size_t(part) * rows * size_t(d)];
        for (int t = 0; t < n; ++t) {
          const size_t row = size_t(t) * H + size_t(h0) * group;
          const size_t n_rows = size_t(task_heads) * group;
          std::fill_n(&m[row], n_rows, -INFINITY);
          std::fill_n(&l[row], n_rows, 0.0f);
          std::fill_n(&out[row * d], n_rows * d, 0.0f);
        }
        const int k0 = part * kSplitKeys, k1 = std::min(n_pos_max, k0 + kSplitKeys);
        for (int c0 = k0; c0 < k1; c0 += int(cpu::kAttnKeys)) {
          const int keys = std::min(int(cpu::kAttnKeys), k1 - c0);
          for (int kvh = h0; kvh < h1; ++kvh) {
            // Into the next part, most often this thread's too.
            int ahead_runs = next_stretch_runs(batch, layer, kvh, c0, n_pos_max, ahead);
            stretch_runs(batch, layer, kvh, c0, keys, panels, value_rows);
            for (int t = 0; t < n; ++t) {
              const int visible = std::min(keys, batch.start_pos + t + 1 - c0);
              if (visible <= 0) continue;
              const size_t row = size_t(t) * H + size_t(kvh) * group;
              ops_.attn_block(panels, value_rows, visible, d, &q_[row * d], group, scale, &m[row],
                              &l[row], &out[row * d], ahead, ahead_runs);
              ahead_runs = 0;  // asked for by the first query
            }
          }
        }
        if (n_parts > 1) continue;
        for (int t = 0; t < n; ++t)  // the whole context: out / l, nothing to combine
          for (int g = 0; g < task_heads * group; ++g) {
            const size_t row = size_t(t) * H + size_t(h0) * group + size_t(g);
            normalize_row(&out[row * d], l[row], &att_[row * d]);
          }
      }
    };
    if (n_tasks <= compute_.size())
      compute_.parallel_for_chunks(n_tasks, n_tasks, run);  // a task each: cheaper to share out
    else
      compute_.parallel_for_balanced(n_tasks, run);
    if (n_parts == 1) return;
    // Each row's parts in order: out = sum_p exp(m_p - M) out_p / sum_p exp(m_p - M) l_p, over
    // the parts the row sees (its first always); with one part, out / l as above.
    auto combine = [&](int64_t r0, int64_t r1, int) {
      for (int64_t r = r0; r < r1; ++r) {
        float top = -INFINITY;
        for (int p = 0; p < n_parts; ++p) top = std::max(top, part_max_[size_t(p) * rows + r]);
        float* o = &att_[size_t(r) * d];
        std::fill_n(o, d, 0.0f);
        float sum = 0.0f;
        for (int p = 0; p < n_parts; ++p) {
          const size_t pr = size_t(p) * rows + size_t(r);
          if (part_max_[pr] == -INFINITY) continue;  // keys the row does not see
          const float w = std::exp(part_max_[pr] - top);
          sum += w * part_sum_[pr];
          ops_.axpy(w, &part_out_[pr * d], d, o);
        }
        ops_.scale(o, d, 1.0f / sum);
      }
    };
    if (n == 1)
      combine(0, int64_t(rows), 0);
    else
      compute_.parallel_for(int64_t(rows), combine);
  }

  const Model& model_;
  KvBlockPool& kv_;
  int threads_;
  int max_batch_;
  std::shared_ptr<cpu::ThreadPool> compute_owner_;  // shared with a draft's backend, or own
  cpu::ThreadPool& compute_;
  const cpu::VecOps& ops_;
  std::vector<LayerMatrices> layers_;
  cpu::WeightMatrix output_;
  PackedArena packed_;  // what the matrices' `packed` point into
  std::vector<double> inv_freq_;
  std::vector<float> x_, xb_, q_, k_, v_, att_, gate_, up_, proj_, rope_cos_, rope_sin_;
  std::vector<AttentionScratch> scratch_;
  std::vector<float> part_max_, part_sum_, part_out_;  // attention_split's parts
  std::vector<float> greedy_logits_;  // forward_greedy's logits
  std::vector<uint16_t> kv_row_;  // a token's keys as F16, before they are stored transposed
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Model& model, KvBlockPool& pool,
                                          const BackendOptions& options) {
  BackendOptions o = options;
  o.threads = std::max(1, o.threads);
  o.max_batch_tokens = std::max(1, o.max_batch_tokens);
  return std::make_unique<CpuBackend>(model, pool, o);
}

}  // namespace ghostline::engine
