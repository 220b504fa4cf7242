// Hyper-parameters of a decoder-only transformer (llama, qwen2, starcoder2, gemma), read from
// GGUF metadata.
#pragma once

#include <string>

namespace ghostline::engine {

class GgufFile;

// How a block normalizes its input.
enum class NormKind {
  Rms,    // x / sqrt(mean(x^2) + eps) * w (llama, qwen2, gemma)
  Layer,  // (x - mean) / sqrt(var + eps) * w + b (starcoder2)
};

// The feed-forward block between the two projections.
enum class FfnKind {
  SwiGlu,  // silu(gate x) * (up x) (llama, qwen2)
  GeGlu,   // gelu(gate x) * (up x) (gemma)
  Gelu,    // gelu(up x), no gate (starcoder2)
};

struct ModelConfig {
  std::string arch;  // one of kSupportedArchitectures
  std::string name;  // general.name, for display
  int n_vocab = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;  // n_embd / n_head unless the file says otherwise
  int n_ff = 0;
  int n_ctx_train = 0;
  float rms_eps = 1e-5f;  // epsilon of every norm, RMSNorm or LayerNorm
  float rope_theta = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / linear scaling factor
  bool rope_neox = false;        // NeoX ordering (rotate halves) instead of adjacent pairs
  bool tied_output = false;      // output projection shares token_embd.weight
  bool qkv_bias = false;         // Q/K/V projections carry biases (qwen2, starcoder2)
  bool out_bias = false;         // the attention output projection carries a bias (starcoder2)
  bool ffn_bias = false;         // ffn_up and ffn_down carry biases (starcoder2)
  bool norm_bias = false;        // the norms carry biases (starcoder2's LayerNorm)
  NormKind norm = NormKind::Rms;
  FfnKind ffn = FfnKind::SwiGlu;
  // The token embeddings are multiplied by this before the first block (gemma: sqrt(n_embd)).
  float embd_scale = 1.0f;

  int kv_dim() const { return n_head_kv * head_dim; }
  int q_dim() const { return n_head * head_dim; }
};

// The architectures whose blocks this engine implements, for error messages.
inline constexpr const char* kSupportedArchitectures = "llama, qwen2, starcoder2, gemma";

// Reads the config from `general.architecture` and `<arch>.*` keys. Throws ModelError naming
// the missing key or the unsupported architecture. `tied_output` and the bias flags are filled
// from the tensors present in the file.
ModelConfig read_model_config(const GgufFile& file);

}  // namespace ghostline::engine
