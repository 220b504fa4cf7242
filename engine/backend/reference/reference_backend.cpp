// The reference forward pass: the transformer written as the math reads (llama2.c style),
// weights dequantized row by row, sums in double, one thread. It is the oracle the fast CPU
// path is tested against, and it reads and writes KV through the same block tables.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/gguf/quant.h"
#include "engine/model/model.h"
#include "engine/model/model_weights.h"

namespace ghostline::engine {
namespace {

constexpr int kB = KvBlockPool::kBlockTokens;

const float* f32_data(const GgufTensor* t) {
  return reinterpret_cast<const float*>(t->data);
}

// y[t][r] = sum_c W[r][c] x[t][c] for each of n tokens.
void matmul(const GgufTensor& w, const std::vector<float>& x, int n, std::vector<float>& y) {
  const int64_t cols = w.shape[0], rows = w.shape[1];
  const size_t row_bytes = ggml_row_bytes(w.type, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  y.assign(static_cast<size_t>(n * rows), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    gguf::dequantize_row(w.type, w.data + r * row_bytes, row.data(), cols);
    for (int t = 0; t < n; ++t) {
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += double(row[c]) * x[t * cols + c];
      y[t * rows + r] = static_cast<float>(sum);
    }
  }
}

void rmsnorm(float* out, const float* x, const float* weight, int n, float eps) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const double scale = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>(x[i] * scale * weight[i]);
}

// LayerNorm: (x - mean) / sqrt(var + eps) * weight + bias; a null bias is zero.
void layernorm(float* out, const float* x, const float* weight, const float* bias, int n,
               float eps) {
  double mean = 0;
  for (int i = 0; i < n; ++i) mean += x[i];
  mean /= n;
  double var = 0;
  for (int i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  const double scale = 1.0 / std::sqrt(var / n + eps);
  for (int i = 0; i < n; ++i)
    out[i] = static_cast<float>((x[i] - mean) * scale * weight[i] + (bias ? bias[i] : 0.0));
}

// The model's norm (RMSNorm or LayerNorm) of one token's residual.
void norm(float* out, const float* x, const GgufTensor* weight, const GgufTensor* bias,
          const ModelConfig& c) {
  if (c.norm == NormKind::Layer)
    layernorm(out, x, f32_data(weight), bias ? f32_data(bias) : nullptr, c.n_embd, c.rms_eps);
  else
    rmsnorm(out, x, f32_data(weight), c.n_embd, c.rms_eps);
}

// Rotates pairs of each head's dimensions by pos * theta_i, theta_i = base^(-2i/d). llama
// pairs adjacent dimensions (2i, 2i+1); NeoX-style models pair i with i + d/2.
void rope(float* v, int n_heads, int pos, const ModelConfig& c) {
  const int d = c.head_dim;
  for (int h = 0; h < n_heads; ++h) {
    float* head = v + h * d;
    for (int i = 0; i < d / 2; ++i) {
      const double theta =
          pos * double(c.rope_freq_scale) * std::pow(double(c.rope_theta), -2.0 * i / d);
      const double cs = std::cos(theta), sn = std::sin(theta);
      const int a = c.rope_neox ? i : 2 * i;
      const int b = c.rope_neox ? i + d / 2 : 2 * i + 1;
      const double x0 = head[a], x1 = head[b];
      head[a] = static_cast<float>(x0 * cs - x1 * sn);
      head[b] = static_cast<float>(x0 * sn + x1 * cs);
    }
  }
}

double silu(double x) {
  return x / (1.0 + std::exp(-x));
}

// GELU with the tanh approximation, as llama.cpp's ggml_gelu and the models' "gelu_pytorch_tanh".
double gelu(double x) {
  constexpr double kSqrt2OverPi = 0.79788456080286535588;
  return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * x * (1.0 + 0.044715 * x * x)));
}

void add_bias(float* v, const float* b, int n) {
  for (int i = 0; i < n; ++i) v[i] += b[i];
}

// Adds `bias` (when there is one) to each of n rows of its length.
void add_bias_rows(std::vector<float>& rows, const GgufTensor* bias, int n) {
  if (!bias) return;
  const int len = static_cast<int>(bias->shape[0]);
  for (int t = 0; t < n; ++t) add_bias(&rows[size_t(t) * len], f32_data(bias), len);
}

class ReferenceBackend final : public Backend {
 public:
  ReferenceBackend(const Model& model, KvBlockPool& pool) : model_(model), pool_(pool) {}
  std::string_view name() const override { return "cpu-reference"; }
  int threads() const override { return 1; }
  // One token at a time, so a batch of any size equals single steps; it is the oracle, not fast.
  VerifyCost verify_cost() const override { return {.max_tokens = 8, .per_token = 1.0}; }
  // Not timed (the oracle is not meant to be fast): the CPU backend's figures.
  DraftCost draft_cost() const override { return {.step = 0.32, .catch_up_per_token = 0.08}; }

  bool forward(const ForwardBatch& batch, std::span<float> logits) override {
    const ModelConfig& c = model_.config();
    const ModelWeights& w = model_.weights();
    const int n = static_cast<int>(batch.tokens.size());
    const int E = c.n_embd, Q = c.q_dim(), KV = c.kv_dim(), d = c.head_dim;

    // x: the residual stream, one row of n_embd per token.
    std::vector<float> x(size_t(n) * E), xb(size_t(n) * E), q, k, v, att_out(size_t(n) * Q), proj,
        gate, up;
    const size_t embd_row_bytes = ggml_row_bytes(w.token_embd->type, E);
    for (int t = 0; t < n; ++t)
      gguf::dequantize_row(w.token_embd->type,
                           w.token_embd->data + size_t(batch.tokens[t]) * embd_row_bytes,
                           x.data() + size_t(t) * E, E);
    if (c.embd_scale != 1.0f)
      for (float& e : x) e *= c.embd_scale;

    for (int l = 0; l < c.n_layer; ++l) {
      if (l > 0 && batch.cancel && batch.cancel->load(std::memory_order_relaxed)) return false;
      const LayerWeights& lw = w.layers[size_t(l)];
      // Attention.
      for (int t = 0; t < n; ++t)
        norm(&xb[size_t(t) * E], &x[size_t(t) * E], lw.attn_norm, lw.attn_norm_b, c);
      matmul(*lw.wq, xb, n, q);
      matmul(*lw.wk, xb, n, k);
      matmul(*lw.wv, xb, n, v);
      for (int t = 0; t < n; ++t) {
        if (lw.bq) add_bias(&q[size_t(t) * Q], f32_data(lw.bq), Q);
        if (lw.bk) add_bias(&k[size_t(t) * KV], f32_data(lw.bk), KV);
        if (lw.bv) add_bias(&v[size_t(t) * KV], f32_data(lw.bv), KV);
        const int pos = batch.start_pos + t;
        rope(&q[size_t(t) * Q], c.n_head, pos, c);
        rope(&k[size_t(t) * KV], c.n_head_kv, pos, c);
        store_kv(batch, l, pos, &k[size_t(t) * KV], &v[size_t(t) * KV]);
      }
      for (int t = 0; t < n; ++t) {
        const int pos = batch.start_pos + t;
        for (int h = 0; h < c.n_head; ++h) {
          // Grouped-query attention: n_head / n_head_kv query heads share one KV head.
          const int kvh = h / (c.n_head / c.n_head_kv);
          const float* qh = &q[size_t(t) * Q + size_t(h) * d];
          std::vector<double> score(size_t(pos) + 1);
          double max_score = -INFINITY;
          for (int p = 0; p <= pos; ++p) {
            const uint16_t* kp = kv_row(batch, l, p, /*values=*/false) + kvh * d;
            double s = 0;
            for (int i = 0; i < d; ++i) s += double(qh[i]) * gguf::fp16_to_fp32(kp[i]);
            score[size_t(p)] = s / std::sqrt(double(d));
            max_score = std::max(max_score, score[size_t(p)]);
          }
          double sum = 0;
          for (double& s : score) sum += (s = std::exp(s - max_score));
          float* out = &att_out[size_t(t) * Q + size_t(h) * d];
          for (int i = 0; i < d; ++i) {
            double acc = 0;
            for (int p = 0; p <= pos; ++p)
              acc += score[size_t(p)] / sum *
                     gguf::fp16_to_fp32(kv_row(batch, l, p, /*values=*/true)[kvh * d + i]);
            out[i] = static_cast<float>(acc);
          }
        }
      }
      matmul(*lw.wo, att_out, n, proj);
      add_bias_rows(proj, lw.bo, n);
      for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];

      // Feed-forward: SwiGLU, GeGLU, or a plain GELU MLP.
      for (int t = 0; t < n; ++t)
        norm(&xb[size_t(t) * E], &x[size_t(t) * E], lw.ffn_norm, lw.ffn_norm_b, c);
      matmul(*lw.w_up, xb, n, up);
      add_bias_rows(up, lw.b_up, n);
      if (c.ffn == FfnKind::Gelu) {
        for (float& u : up) u = static_cast<float>(gelu(u));
      } else {
        matmul(*lw.w_gate, xb, n, gate);
        const auto act = c.ffn == FfnKind::GeGlu ? gelu : silu;
        for (size_t i = 0; i < up.size(); ++i) up[i] = static_cast<float>(act(gate[i]) * up[i]);
      }
      matmul(*lw.w_down, up, n, proj);
      add_bias_rows(proj, lw.b_down, n);
      for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    }

    // Final norm and output projection, only for the tokens whose logits are wanted.
    const int first = n - batch.n_logits;
    std::vector<float> last(size_t(batch.n_logits) * E), out;
    for (int t = 0; t < batch.n_logits; ++t)
      norm(&last[size_t(t) * E], &x[size_t(first + t) * E], w.output_norm, w.output_norm_b, c);
    if (batch.n_logits == 0) return true;
    matmul(*w.output, last, batch.n_logits, out);
    std::copy(out.begin(), out.end(), logits.begin());
    return true;
  }

  bool forward_greedy(const ForwardBatch& batch, std::span<int32_t> tokens) override {
    return forward_greedy_on_host(*this, model_.config().n_vocab, batch, tokens, greedy_logits_);
  }

 private:
  const uint16_t* kv_row(const ForwardBatch& batch, int layer, int pos, bool values) const {
    const BlockId id = batch.blocks[size_t(pos / kB)];
    const uint16_t* base = values ? pool_.values(id, layer) : pool_.keys(id, layer);
    return base + size_t(pos % kB) * pool_.kv_dim();
  }
  void store_kv(const ForwardBatch& batch, int layer, int pos, const float* k, const float* v) {
    const BlockId id = batch.blocks[size_t(pos / kB)];
    uint16_t* kd = pool_.keys(id, layer) + size_t(pos % kB) * pool_.kv_dim();
    uint16_t* vd = pool_.values(id, layer) + size_t(pos % kB) * pool_.kv_dim();
    for (int i = 0; i < pool_.kv_dim(); ++i) {
      kd[i] = gguf::fp32_to_fp16(k[i]);
      vd[i] = gguf::fp32_to_fp16(v[i]);
    }
  }

  const Model& model_;
  KvBlockPool& pool_;
  std::vector<float> greedy_logits_;  // forward_greedy's logits
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend(const Model& model, KvBlockPool& pool) {
  return std::make_unique<ReferenceBackend>(model, pool);
}

}  // namespace ghostline::engine
