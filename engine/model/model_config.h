// Hyper-parameters of a llama-family model, read from GGUF metadata.
#pragma once

#include <string>

namespace ghostline::engine {

class GgufFile;

struct ModelConfig {
  std::string arch;  // "llama" or "qwen2"
  std::string name;  // general.name, for display
  int n_vocab = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;  // n_embd / n_head unless the file says otherwise
  int n_ff = 0;
  int n_ctx_train = 0;
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / linear scaling factor
  bool rope_neox = false;        // NeoX ordering (rotate halves) instead of adjacent pairs
  bool tied_output = false;      // output projection shares token_embd.weight
  bool qkv_bias = false;         // Q/K/V projections carry biases (qwen2)

  int kv_dim() const { return n_head_kv * head_dim; }
  int q_dim() const { return n_head * head_dim; }
};

// The architectures whose blocks this engine implements, for error messages.
inline constexpr const char* kSupportedArchitectures = "llama, qwen2";

// Reads the config from `general.architecture` and `<arch>.*` keys. Throws ModelError naming
// the missing key or the unsupported architecture. `tied_output`/`qkv_bias` are filled from
// the tensors present in the file.
ModelConfig read_model_config(const GgufFile& file);

}  // namespace ghostline::engine
