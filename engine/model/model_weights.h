// The tensors of a decoder-only model, bound by name to the mapped GGUF file. Matrices are
// stored as GGUF lays them out: shape {cols, rows}, each row contiguous, so y = W x is a dot
// product of x with every row.
#pragma once

#include <vector>

#include "engine/gguf/gguf_file.h"

namespace ghostline::engine {

struct LayerWeights {
  const GgufTensor* attn_norm = nullptr;  // {n_embd}
  const GgufTensor* attn_norm_b = nullptr;  // {n_embd}, LayerNorm only
  const GgufTensor* wq = nullptr;         // {n_embd, q_dim}
  const GgufTensor* wk = nullptr;         // {n_embd, kv_dim}
  const GgufTensor* wv = nullptr;         // {n_embd, kv_dim}
  const GgufTensor* bq = nullptr;         // {q_dim}, qwen2 and starcoder2 only
  const GgufTensor* bk = nullptr;         // {kv_dim}
  const GgufTensor* bv = nullptr;         // {kv_dim}
  const GgufTensor* wo = nullptr;         // {q_dim, n_embd}
  const GgufTensor* bo = nullptr;         // {n_embd}, starcoder2 only
  const GgufTensor* ffn_norm = nullptr;   // {n_embd}
  const GgufTensor* ffn_norm_b = nullptr;  // {n_embd}, LayerNorm only
  const GgufTensor* w_gate = nullptr;     // {n_embd, n_ff}; none in a GELU MLP (starcoder2)
  const GgufTensor* w_up = nullptr;       // {n_embd, n_ff}
  const GgufTensor* b_up = nullptr;       // {n_ff}, starcoder2 only
  const GgufTensor* w_down = nullptr;     // {n_ff, n_embd}
  const GgufTensor* b_down = nullptr;     // {n_embd}, starcoder2 only
};

struct ModelWeights {
  const GgufTensor* token_embd = nullptr;   // {n_embd, n_vocab}
  const GgufTensor* output_norm = nullptr;  // {n_embd}
  const GgufTensor* output_norm_b = nullptr;  // {n_embd}, LayerNorm only
  const GgufTensor* output = nullptr;       // {n_embd, n_vocab}; token_embd when tied
  std::vector<LayerWeights> layers;
};

}  // namespace ghostline::engine
