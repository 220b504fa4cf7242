// Writes GGUF files of the supported architectures with random weights of any shape and weight
// type, so that benchmarks can run on real-size models (e.g. the Qwen2.5-Coder-0.5B shape) without
// downloading one. The vocabulary is a byte-level BPE one of the requested size with FIM
// tokens, enough for the tokenizer and the daemon to work end to end.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "engine/gguf/ggml_type.h"

namespace ghostline::engine {

struct RandomModelSpec {
  // "qwen2" (NeoX RoPE, Q/K/V biases), "llama", "starcoder2" (LayerNorm, biases everywhere,
  // GELU MLP without gate) or "gemma" (GeGLU, scaled embeddings)
  std::string arch = "qwen2";
  int n_vocab = 151936;
  int n_embd = 896;
  int n_layer = 24;
  int n_head = 14;
  int n_head_kv = 2;
  int n_ff = 4864;
  int n_ctx = 32768;
  bool tied_output = true;
  // Type of the matrices (norms and biases stay F32): any type gguf::can_quantize writes. Where
  // a row is not a multiple of 256 values a K-quant or IQ4_XS falls back as llama-quantize's
  // does (incompatible_row_fallback).
  GgmlType type = GgmlType::Q8_0;
  // llama-quantize's Q4_K_M or Q5_K_M preset instead of one type (`type` is then Q4_K or
  // Q5_K): `type`, with Q6_K for the output (or the tied embedding) and for attn_v and ffn_down
  // of the layers use_more_bits picks, then the same fallbacks (so Qwen2.5-Coder-0.5B's
  // 896-wide rows get Q5_0 or Q5_1, and Q8_0).
  bool k_m_mix = false;
  uint64_t seed = 1;
  // A GGUF file whose tokenizer (tokenizer.ggml.* metadata) the model takes instead of the
  // synthetic one, e.g. the real Qwen2.5-Coder vocabulary; n_vocab becomes its size.
  std::filesystem::path vocab_from{};
};

// The type llama-quantize writes instead of `type` for a row whose length is not a multiple of
// 256: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K / Q3_K / IQ4_XS -> IQ4_NL; other types
// are returned unchanged.
GgmlType incompatible_row_fallback(GgmlType type);

// The type of matrix `name` (of `layer`, with rows of `cols` values) in a file made from `spec`.
GgmlType random_model_tensor_type(const RandomModelSpec& spec, std::string_view name, int layer,
                                  int64_t cols);

// Streams the file to `path` (never holding a whole tensor in memory); throws
// std::runtime_error naming the problem (unsupported type, shape not a multiple of the block
// size, write failure).
void write_random_model(const std::filesystem::path& path, const RandomModelSpec& spec);

}  // namespace ghostline::engine
