#include "engine/model/model_config.h"

#include <cmath>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"

namespace ghostline::engine {
namespace {

struct ArchTraits {
  std::string_view name;
  bool rope_neox;
  NormKind norm;
  FfnKind ffn;
  bool scale_embeddings;  // by sqrt(n_embd)
  double default_eps;     // when the file has no epsilon key
};

// llama files store Q/K permuted for adjacent-pair RoPE; qwen2, starcoder2 and gemma rotate
// the two halves (llama.cpp's LLAMA_ROPE_TYPE_NEOX; for gemma the reference logits confirm it:
// adjacent pairs miss them by about 1 std).
constexpr ArchTraits kArchitectures[] = {
    {"llama", false, NormKind::Rms, FfnKind::SwiGlu, false, 1e-5},
    {"qwen2", true, NormKind::Rms, FfnKind::SwiGlu, false, 1e-6},
    {"starcoder2", true, NormKind::Layer, FfnKind::Gelu, false, 1e-5},
    {"gemma", true, NormKind::Rms, FfnKind::GeGlu, true, 1e-6},
};

std::string file_name(const GgufFile& file) {
  return file.path().filename().string();
}

int64_t required_int(const GgufFile& file, const std::string& key) {
  auto v = file.get_int(key);
  if (!v)
    throw ModelError(file_name(file) + ": metadata key '" + key +
                     "' is missing; the file was not written for a llama-family model or is "
                     "incomplete (re-convert it with a current converter)");
  if (*v <= 0 || *v > (int64_t{1} << 30))
    throw ModelError(file_name(file) + ": metadata key '" + key + "' has an impossible value " +
                     std::to_string(*v));
  return *v;
}

}  // namespace

ModelConfig read_model_config(const GgufFile& file) {
  ModelConfig c;
  auto arch = file.get_string("general.architecture");
  if (!arch)
    throw ModelError(file_name(file) +
                     ": metadata key 'general.architecture' is missing; supported architectures: " +
                     kSupportedArchitectures);
  const ArchTraits* traits = nullptr;
  for (const auto& a : kArchitectures)
    if (a.name == *arch) traits = &a;
  if (!traits)
    throw ModelError(file_name(file) + ": architecture '" + std::string(*arch) +
                     "' is not supported; supported architectures: " + kSupportedArchitectures);
  c.arch = std::string(*arch);
  c.name = std::string(file.get_string("general.name").value_or(""));
  const std::string p = c.arch + ".";

  c.n_embd = static_cast<int>(required_int(file, p + "embedding_length"));
  c.n_layer = static_cast<int>(required_int(file, p + "block_count"));
  c.n_ff = static_cast<int>(required_int(file, p + "feed_forward_length"));
  c.n_head = static_cast<int>(required_int(file, p + "attention.head_count"));
  c.n_head_kv = file.has(p + "attention.head_count_kv")
                    ? static_cast<int>(required_int(file, p + "attention.head_count_kv"))
                    : c.n_head;
  c.n_ctx_train = file.has(p + "context_length")
                      ? static_cast<int>(required_int(file, p + "context_length"))
                      : 2048;
  if (c.n_head % c.n_head_kv != 0)
    throw ModelError(file_name(file) + ": head_count " + std::to_string(c.n_head) +
                     " is not a multiple of head_count_kv " + std::to_string(c.n_head_kv));
  c.head_dim = file.has(p + "attention.key_length")
                   ? static_cast<int>(required_int(file, p + "attention.key_length"))
                   : c.n_embd / c.n_head;
  if (file.has(p + "attention.value_length") &&
      required_int(file, p + "attention.value_length") != c.head_dim)
    throw ModelError(file_name(file) + ": attention.value_length differs from key_length; " +
                     "such models are not supported");
  if (c.head_dim % 2 != 0)
    throw ModelError(file_name(file) + ": head dimension " + std::to_string(c.head_dim) +
                     " is odd; RoPE needs an even head dimension");
  if (file.has(p + "rope.dimension_count") &&
      required_int(file, p + "rope.dimension_count") != c.head_dim)
    throw ModelError(file_name(file) + ": partial rotary embeddings (rope.dimension_count " +
                     std::to_string(*file.get_int(p + "rope.dimension_count")) +
                     " != head dimension " + std::to_string(c.head_dim) + ") are not supported");

  // RMSNorm models name their epsilon layer_norm_rms_epsilon, LayerNorm models
  // layer_norm_epsilon.
  const std::string eps_key = traits->norm == NormKind::Rms ? "attention.layer_norm_rms_epsilon"
                                                            : "attention.layer_norm_epsilon";
  c.rms_eps = static_cast<float>(file.get_float(p + eps_key).value_or(traits->default_eps));
  c.rope_theta = static_cast<float>(file.get_float(p + "rope.freq_base").value_or(10000.0));
  c.rope_neox = traits->rope_neox;
  c.norm = traits->norm;
  c.ffn = traits->ffn;
  // As llama.cpp computes it: sqrtf of the width, in float.
  c.embd_scale = traits->scale_embeddings ? std::sqrt(static_cast<float>(c.n_embd)) : 1.0f;

  // Linear RoPE scaling (positions divided by the factor). Other kinds change the frequencies
  // per dimension and are refused rather than computed wrongly.
  double factor = 1.0;
  if (auto type = file.get_string(p + "rope.scaling.type")) {
    if (*type == "linear") {
      factor = file.get_float(p + "rope.scaling.factor").value_or(1.0);
    } else if (*type != "none") {
      throw ModelError(file_name(file) + ": RoPE scaling type '" + std::string(*type) +
                       "' is not supported (supported: none, linear)");
    }
  } else if (auto legacy = file.get_float(p + "rope.scale_linear")) {
    factor = *legacy;
  }
  if (!(factor > 0) || !std::isfinite(factor))
    throw ModelError(file_name(file) + ": RoPE scaling factor must be positive");
  c.rope_freq_scale = static_cast<float>(1.0 / factor);

  // The vocabulary size is the number of tokens; the embedding table must agree.
  if (auto n = file.get_int(p + "vocab_size")) c.n_vocab = static_cast<int>(*n);
  if (auto a = file.array_info("tokenizer.ggml.tokens")) c.n_vocab = static_cast<int>(a->second);
  if (const GgufTensor* embd = file.tensor("token_embd.weight"); embd && embd->shape.size() == 2)
    if (c.n_vocab == 0) c.n_vocab = static_cast<int>(embd->shape[1]);
  if (c.n_vocab <= 0)
    throw ModelError(file_name(file) +
                     ": the vocabulary size is unknown (no tokenizer.ggml.tokens)");

  c.tied_output = file.tensor("output.weight") == nullptr;
  c.qkv_bias = file.tensor("blk.0.attn_q.bias") != nullptr;
  c.out_bias = file.tensor("blk.0.attn_output.bias") != nullptr;
  c.ffn_bias = file.tensor("blk.0.ffn_up.bias") != nullptr;
  c.norm_bias = file.tensor("blk.0.attn_norm.bias") != nullptr;
  return c;
}

}  // namespace ghostline::engine
