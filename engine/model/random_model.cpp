#include "engine/model/random_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "engine/gguf/file_type.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/quant.h"
#include "engine/gguf/quantize.h"

namespace ghostline::engine {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF"
constexpr size_t kAlignment = 32;

// GGUF value type ids.
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

class Out {
 public:
  explicit Out(const std::filesystem::path& path) : f_(path, std::ios::binary | std::ios::trunc) {
    if (!f_) throw std::runtime_error("cannot create " + path.string());
  }
  template <typename T>
  void put(T v) {
    f_.write(reinterpret_cast<const char*>(&v), sizeof v);
    offset_ += sizeof v;
  }
  void bytes(const void* p, size_t n) {
    f_.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
    offset_ += n;
  }
  void str(std::string_view s) {
    put(uint64_t(s.size()));
    bytes(s.data(), s.size());
  }
  void pad() {
    static const char zeros[kAlignment] = {};
    bytes(zeros, (kAlignment - offset_ % kAlignment) % kAlignment);
  }
  void check(const std::filesystem::path& path) {
    f_.flush();
    if (!f_) throw std::runtime_error("write failed: " + path.string());
  }

 private:
  std::ofstream f_;
  uint64_t offset_ = 0;
};

struct TensorPlan {
  std::string name;
  GgmlType type;
  std::vector<int64_t> shape;  // {cols, rows} or {n}
  enum class Fill { Ones, Random } fill;
  size_t bytes() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return ggml_row_bytes(type, n);
  }
};

// Bytes of one row of random values with the spread of a trained model's weights.
class RowWriter {
 public:
  explicit RowWriter(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}

  void write(Out& out, const TensorPlan& t) {
    const int64_t cols = t.shape[0];
    const int64_t rows = t.shape.size() > 1 ? t.shape[1] : 1;
    values_.resize(size_t(cols));
    row_.resize(ggml_row_bytes(t.type, cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : values_) v = t.fill == TensorPlan::Fill::Ones ? 1.0f : uniform() * 0.035f;
      encode(t.type, cols);
      out.bytes(row_.data(), row_.size());
    }
  }

 private:
  // Uniform in [-1, 1) (std 0.577; scaled to about 0.02).
  float uniform() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return float(int32_t(state_ >> 32)) * 0x1.0p-31f;
  }
  void encode(GgmlType type, int64_t cols) {
    gguf::quantize_row(type, values_.data(), row_.data(), cols);
  }

  uint64_t state_;
  std::vector<float> values_;
  std::vector<std::byte> row_;
};

// GPT-2's byte-to-character mapping, so that every byte has a printable token.
std::vector<std::string> byte_tokens() {
  std::vector<std::string> out(256);
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const uint32_t cp = printable ? uint32_t(b) : uint32_t(256 + extra++);
    std::string s;
    if (cp < 0x80) {
      s += char(cp);
    } else {
      s += char(0xC0 | (cp >> 6));
      s += char(0x80 | (cp & 0x3F));
    }
    out[size_t(b)] = s;
  }
  return out;
}

// llama-quantize's use_more_bits: the first and last eighth of the layers and every third one
// between them get more bits in the _M presets.
bool use_more_bits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

}  // namespace

GgmlType incompatible_row_fallback(GgmlType type) {
  switch (type) {
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::IQ4_XS:
      return GgmlType::IQ4_NL;
    case GgmlType::Q4_K:
      return GgmlType::Q5_0;
    case GgmlType::Q5_K:
      return GgmlType::Q5_1;
    case GgmlType::Q6_K:
      return GgmlType::Q8_0;
    default:
      return type;
  }
}

GgmlType random_model_tensor_type(const RandomModelSpec& s, std::string_view name, int layer,
                                  int64_t cols) {
  GgmlType type = s.type;
  if (s.k_m_mix) {
    const bool output = name == "output.weight" || (s.tied_output && name == "token_embd.weight");
    if (output) {
      type = GgmlType::Q6_K;
    } else if ((name.ends_with("attn_v.weight") || name.ends_with("ffn_down.weight")) &&
               use_more_bits(layer, s.n_layer)) {
      type = GgmlType::Q6_K;
    }
  }
  if (cols % 256 != 0) type = incompatible_row_fallback(type);
  return type;
}

void write_random_model(const std::filesystem::path& path, const RandomModelSpec& spec) {
  RandomModelSpec s = spec;
  if (s.arch != "qwen2" && s.arch != "llama" && s.arch != "starcoder2" && s.arch != "gemma")
    throw std::runtime_error("random models are qwen2, llama, starcoder2 or gemma, not " + s.arch);
  if (s.n_head <= 0 || s.n_head_kv <= 0 || s.n_embd % s.n_head || s.n_head % s.n_head_kv ||
      (s.n_embd / s.n_head) % 2)
    throw std::runtime_error("inconsistent head counts for embedding size " +
                             std::to_string(s.n_embd));
  if (s.k_m_mix && s.type != GgmlType::Q4_K && s.type != GgmlType::Q5_K)
    throw std::runtime_error("the _K_M mixes are of Q4_K or Q5_K, not " +
                             std::string(ggml_type_name(s.type)));
  if (!gguf::can_quantize(s.type))
    throw std::runtime_error("random models cannot be written as " +
                             std::string(ggml_type_name(s.type)));
  // The vocabulary: another file's, or the 256 byte tokens, two-character merges of printable
  // ASCII, filler tokens, and the special tokens at the end.
  std::unique_ptr<GgufFile> vocab;
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> types;
  if (!s.vocab_from.empty()) {
    vocab = GgufFile::open(s.vocab_from.string());
    for (auto t : vocab->get_string_array("tokenizer.ggml.tokens")) tokens.emplace_back(t);
    for (auto m : vocab->get_string_array("tokenizer.ggml.merges")) merges.emplace_back(m);
    for (int64_t t : vocab->get_int_array("tokenizer.ggml.token_type")) types.push_back(int32_t(t));
    if (tokens.empty() || types.size() != tokens.size())
      throw std::runtime_error(s.vocab_from.string() +
                               " holds no tokenizer (tokenizer.ggml.tokens and token_type)");
    s.n_vocab = int(tokens.size());
  } else {
    // Qwen2.5-Coder's FIM tokens and its file separator (repository-level context).
    const std::vector<std::string> specials = {"<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>",
                                               "<|fim_suffix|>", "<|fim_pad|>", "<|file_sep|>"};
    if (s.n_vocab < 256 + int(specials.size()))
      throw std::runtime_error("the vocabulary needs at least " +
                               std::to_string(256 + specials.size()) + " tokens");
    tokens = byte_tokens();
    const int n_normal = s.n_vocab - int(specials.size());
    for (char a = 'a'; a <= 'z' && int(tokens.size()) < n_normal; ++a)
      for (char b = 'a'; b <= 'z' && int(tokens.size()) < n_normal; ++b) {
        tokens.push_back(std::string{a, b});
        merges.push_back(std::string{a, ' ', b});
      }
    for (int i = 0; int(tokens.size()) < n_normal; ++i)
      tokens.push_back("<unused" + std::to_string(i) + ">");
    types.assign(tokens.size(), 1);  // normal
    for (const auto& sp : specials) {
      tokens.push_back(sp);
      types.push_back(3);  // control
    }
  }
  const auto special_id = [&](std::string_view text) {
    return uint32_t(std::find(tokens.begin(), tokens.end(), text) - tokens.begin());
  };

  const int hd = s.n_embd / s.n_head, kv = hd * s.n_head_kv;
  // qwen2: Q/K/V biases; starcoder2: LayerNorm and every projection biased, no gate.
  const bool starcoder2 = s.arch == "starcoder2";
  const bool bias = s.arch == "qwen2" || starcoder2;
  std::vector<TensorPlan> plan;
  int layer = 0;
  auto matrix = [&](std::string name, int64_t cols, int64_t rows) {
    const GgmlType type = random_model_tensor_type(s, name, layer, cols);
    const int64_t block = ggml_type_traits(type).block_elems;
    if (cols % block)
      throw std::runtime_error(name + " has " + std::to_string(cols) +
                               " columns, not a multiple of " + std::to_string(block) + " for " +
                               std::string(ggml_type_name(type)));
    plan.push_back({std::move(name), type, {cols, rows}, TensorPlan::Fill::Random});
  };
  auto vec = [&](std::string name, int64_t n, TensorPlan::Fill fill) {
    plan.push_back({std::move(name), GgmlType::F32, {n}, fill});
  };
  matrix("token_embd.weight", s.n_embd, s.n_vocab);
  vec("output_norm.weight", s.n_embd, TensorPlan::Fill::Ones);
  if (starcoder2) vec("output_norm.bias", s.n_embd, TensorPlan::Fill::Random);
  if (!s.tied_output) matrix("output.weight", s.n_embd, s.n_vocab);
  for (int l = 0; l < s.n_layer; ++l) {
    layer = l;
    const std::string p = "blk." + std::to_string(l) + ".";
    vec(p + "attn_norm.weight", s.n_embd, TensorPlan::Fill::Ones);
    if (starcoder2) vec(p + "attn_norm.bias", s.n_embd, TensorPlan::Fill::Random);
    matrix(p + "attn_q.weight", s.n_embd, s.n_embd);
    matrix(p + "attn_k.weight", s.n_embd, kv);
    matrix(p + "attn_v.weight", s.n_embd, kv);
    if (bias) {
      vec(p + "attn_q.bias", s.n_embd, TensorPlan::Fill::Random);
      vec(p + "attn_k.bias", kv, TensorPlan::Fill::Random);
      vec(p + "attn_v.bias", kv, TensorPlan::Fill::Random);
    }
    matrix(p + "attn_output.weight", s.n_embd, s.n_embd);
    if (starcoder2) vec(p + "attn_output.bias", s.n_embd, TensorPlan::Fill::Random);
    vec(p + "ffn_norm.weight", s.n_embd, TensorPlan::Fill::Ones);
    if (starcoder2) vec(p + "ffn_norm.bias", s.n_embd, TensorPlan::Fill::Random);
    if (!starcoder2) matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff);
    matrix(p + "ffn_up.weight", s.n_embd, s.n_ff);
    if (starcoder2) vec(p + "ffn_up.bias", s.n_ff, TensorPlan::Fill::Random);
    matrix(p + "ffn_down.weight", s.n_ff, s.n_embd);
    if (starcoder2) vec(p + "ffn_down.bias", s.n_embd, TensorPlan::Fill::Random);
  }

  Out out(path);
  const std::string a = s.arch + ".";
  struct Kv {
    std::string key;
    std::function<void()> value;
  };
  std::vector<Kv> kvs;
  auto u32 = [&](std::string k, uint32_t v) {
    kvs.push_back({std::move(k), [&out, v] { out.put(kU32), out.put(v); }});
  };
  auto f32 = [&](std::string k, float v) {
    kvs.push_back({std::move(k), [&out, v] { out.put(kF32), out.put(v); }});
  };
  auto str = [&](std::string k, std::string v) {
    kvs.push_back({std::move(k), [&out, v] { out.put(kString), out.str(v); }});
  };
  auto strs = [&](std::string k, const std::vector<std::string>* v) {
    kvs.push_back({std::move(k), [&out, v] {
                     out.put(kArray), out.put(kString), out.put(uint64_t(v->size()));
                     for (const auto& e : *v) out.str(e);
                   }});
  };
  str("general.architecture", s.arch);
  str("general.name", "ghostline random " + s.arch + " " + std::string(ggml_type_name(s.type)) +
                          (s.k_m_mix ? "_M" : ""));
  u32("general.alignment", kAlignment);
  // As llama-quantize records the preset (llama-bench and `ghostline bench` name the file by it).
  if (const auto ftype =
          s.k_m_mix
              ? std::optional<int64_t>(s.type == GgmlType::Q5_K ? kFileTypeQ5_K_M : kFileTypeQ4_K_M)
              : file_type_of(s.type))
    u32("general.file_type", uint32_t(*ftype));
  u32(a + "context_length", uint32_t(s.n_ctx));
  u32(a + "embedding_length", uint32_t(s.n_embd));
  u32(a + "block_count", uint32_t(s.n_layer));
  u32(a + "feed_forward_length", uint32_t(s.n_ff));
  u32(a + "attention.head_count", uint32_t(s.n_head));
  u32(a + "attention.head_count_kv", uint32_t(s.n_head_kv));
  if (starcoder2)
    f32(a + "attention.layer_norm_epsilon", 1e-5f);
  else
    f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  // As converted Gemma files state their head size.
  if (s.arch == "gemma") {
    u32(a + "attention.key_length", uint32_t(hd));
    u32(a + "attention.value_length", uint32_t(hd));
  }
  f32(a + "rope.freq_base", 1000000.0f);
  str("tokenizer.ggml.model",
      vocab ? std::string(vocab->get_string("tokenizer.ggml.model").value_or("gpt2")) : "gpt2");
  str("tokenizer.ggml.pre",
      vocab ? std::string(vocab->get_string("tokenizer.ggml.pre").value_or("default")) : "qwen2");
  strs("tokenizer.ggml.tokens", &tokens);
  kvs.push_back({"tokenizer.ggml.token_type", [&] {
                   out.put(kArray), out.put(kI32), out.put(uint64_t(types.size()));
                   for (int32_t t : types) out.put(t);
                 }});
  strs("tokenizer.ggml.merges", &merges);
  if (vocab) {
    for (const char* key :
         {"bos", "eos", "eot", "padding", "unknown", "fim_pre", "fim_suf", "fim_mid", "fim_pad",
          "fim_rep", "fim_sep", "prefix", "suffix", "middle"})
      if (auto id = vocab->get_int("tokenizer.ggml." + std::string(key) + "_token_id"))
        u32("tokenizer.ggml." + std::string(key) + "_token_id", uint32_t(*id));
    for (const char* key : {"add_bos_token", "add_eos_token"})
      if (auto flag = vocab->get_bool("tokenizer.ggml." + std::string(key))) {
        const bool v = *flag;
        kvs.push_back({"tokenizer.ggml." + std::string(key),
                       [&out, v] { out.put(kBool), out.put(uint8_t(v)); }});
      }
  } else {
    u32("tokenizer.ggml.eos_token_id", special_id("<|endoftext|>"));
    u32("tokenizer.ggml.padding_token_id", special_id("<|endoftext|>"));
  }

  out.put(kGgufMagic);
  out.put(uint32_t(3));
  out.put(uint64_t(plan.size()));
  out.put(uint64_t(kvs.size()));
  for (const auto& kv_entry : kvs) {
    out.str(kv_entry.key);
    kv_entry.value();
  }
  uint64_t offset = 0;
  for (const auto& t : plan) {
    out.str(t.name);
    out.put(uint32_t(t.shape.size()));
    for (int64_t d : t.shape) out.put(uint64_t(d));
    out.put(uint32_t(t.type));
    out.put(offset);
    offset += (t.bytes() + kAlignment - 1) / kAlignment * kAlignment;
  }
  out.pad();
  RowWriter rows(s.seed);
  for (const auto& t : plan) {
    rows.write(out, t);
    out.pad();
  }
  out.check(path);
}

}  // namespace ghostline::engine
