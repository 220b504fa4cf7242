// Writes llama-family GGUF files with random weights of any shape and weight type, so that
// benchmarks can run on real-size models (e.g. the Qwen2.5-Coder-0.5B shape) without
// downloading one. The vocabulary is a byte-level BPE one of the requested size with FIM
// tokens, enough for the tokenizer and the daemon to work end to end.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/gguf/ggml_type.h"

namespace ghostline::engine {

struct RandomModelSpec {
  std::string arch = "qwen2";  // "qwen2" (NeoX RoPE, Q/K/V biases) or "llama"
  int n_vocab = 151936;
  int n_embd = 896;
  int n_layer = 24;
  int n_head = 14;
  int n_head_kv = 2;
  int n_ff = 4864;
  int n_ctx = 32768;
  bool tied_output = true;
  GgmlType type = GgmlType::Q8_0;  // of the matrices: F32, F16, Q8_0 or Q4_0; norms stay F32
  uint64_t seed = 1;
  // A GGUF file whose tokenizer (tokenizer.ggml.* metadata) the model takes instead of the
  // synthetic one, e.g. the real Qwen2.5-Coder vocabulary; n_vocab becomes its size.
  std::filesystem::path vocab_from;
};

// Streams the file to `path` (never holding a whole tensor in memory); throws
// std::runtime_error naming the problem (unsupported type, shape not a multiple of the block
// size, write failure).
void write_random_model(const std::filesystem::path& path, const RandomModelSpec& spec);

}  // namespace ghostline::engine
