#include "engine/model/model.h"

#include <algorithm>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_weights.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {
namespace {

std::string shape_text(std::span<const int64_t> shape) {
  std::string s = "{";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "}";
}

// Binds tensors by name, recording every problem rather than stopping at the first, so that
// `model-info` can list them all.
class Binder {
 public:
  Binder(const GgufFile& file, std::vector<ModelProblem>& problems)
      : file_(file), problems_(problems) {}

  // A matrix of `rows` rows of `cols` values (GGUF shape {cols, rows}) in a type the matrix
  // kernels support.
  const GgufTensor* matrix(const std::string& name, int64_t cols, int64_t rows) {
    return bind(name, {cols, rows}, /*vector=*/false, /*optional=*/false);
  }
  const GgufTensor* vector(const std::string& name, int64_t n, bool optional = false) {
    return bind(name, {n}, /*vector=*/true, optional);
  }

 private:
  const GgufTensor* bind(const std::string& name, std::vector<int64_t> want, bool is_vector,
                         bool optional) {
    const GgufTensor* t = file_.tensor(name);
    if (!t) {
      if (!optional)
        problems_.push_back(
            {"missing tensor", name,
             "tensor '" + name + "' is missing (expected shape " + shape_text(want) + ")",
             "the file is incomplete or of another architecture; convert the "
             "model again with llama.cpp's convert_hf_to_gguf.py"});
      return nullptr;
    }
    if (t->shape != want) {
      problems_.push_back({"tensor shape differs from the metadata", name,
                           "tensor '" + name + "' has shape " + shape_text(t->shape) +
                               ", expected " + shape_text(want) +
                               " from the metadata (the file's metadata and weights disagree)",
                           "convert the model again; the metadata must describe its weights"});
      return nullptr;
    }
    const auto& traits = ggml_type_traits(t->type);
    const std::string type_name(traits.name);
    if (is_vector && t->type != GgmlType::F32) {
      problems_.push_back(
          {"vector of type " + type_name, name,
           "tensor '" + name + "' has type " + type_name + "; norm and bias vectors must be F32",
           "quantize again leaving 1-D tensors in F32, as llama-quantize does"});
      return nullptr;
    }
    if (!traits.supported) {
      problems_.push_back(
          {"tensor type " + type_name, name,
           "tensor '" + name + "' has type " + type_name + ", which Ghostline cannot compute with",
           "re-quantize to one of " + supported_types() +
               " (llama-quantize --allow-requantize FILE OUT Q4_K_M)"});
      return nullptr;
    }
    return t;
  }

  // The matrix types of the type table, for a message that stays right as types are added.
  static std::string supported_types() {
    std::string list;
    for (uint32_t id = 0; id < 64; ++id)
      if (auto t = ggml_type_traits(id); t && t->supported)
        list += (list.empty() ? "" : ", ") + std::string(t->name);
    return list;
  }

  const GgufFile& file_;
  std::vector<ModelProblem>& problems_;
};

ModelWeights bind_weights(const GgufFile& file, const ModelConfig& c,
                          std::vector<ModelProblem>& problems) {
  Binder b(file, problems);
  ModelWeights w;
  w.token_embd = b.matrix("token_embd.weight", c.n_embd, c.n_vocab);
  w.output_norm = b.vector("output_norm.weight", c.n_embd);
  w.output_norm_b = b.vector("output_norm.bias", c.n_embd, /*optional=*/!c.norm_bias);
  w.output = c.tied_output ? w.token_embd : b.matrix("output.weight", c.n_embd, c.n_vocab);
  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[static_cast<size_t>(i)];
    l.attn_norm = b.vector(p + "attn_norm.weight", c.n_embd);
    l.attn_norm_b = b.vector(p + "attn_norm.bias", c.n_embd, /*optional=*/!c.norm_bias);
    l.wq = b.matrix(p + "attn_q.weight", c.n_embd, c.q_dim());
    l.wk = b.matrix(p + "attn_k.weight", c.n_embd, c.kv_dim());
    l.wv = b.matrix(p + "attn_v.weight", c.n_embd, c.kv_dim());
    l.bq = b.vector(p + "attn_q.bias", c.q_dim(), /*optional=*/!c.qkv_bias);
    l.bk = b.vector(p + "attn_k.bias", c.kv_dim(), /*optional=*/!c.qkv_bias);
    l.bv = b.vector(p + "attn_v.bias", c.kv_dim(), /*optional=*/!c.qkv_bias);
    l.wo = b.matrix(p + "attn_output.weight", c.q_dim(), c.n_embd);
    l.bo = b.vector(p + "attn_output.bias", c.n_embd, /*optional=*/!c.out_bias);
    l.ffn_norm = b.vector(p + "ffn_norm.weight", c.n_embd);
    l.ffn_norm_b = b.vector(p + "ffn_norm.bias", c.n_embd, /*optional=*/!c.norm_bias);
    if (c.ffn != FfnKind::Gelu) l.w_gate = b.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff);
    l.w_up = b.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff);
    l.b_up = b.vector(p + "ffn_up.bias", c.n_ff, /*optional=*/!c.ffn_bias);
    l.w_down = b.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd);
    l.b_down = b.vector(p + "ffn_down.bias", c.n_embd, /*optional=*/!c.ffn_bias);
  }
  return w;
}

std::string join_problems(const GgufFile& file, const std::vector<ModelProblem>& problems) {
  std::string msg = file.path().filename().string() + ": cannot serve this model: ";
  const auto groups = group_problems(problems);
  for (size_t i = 0; i < groups.size(); ++i) msg += (i ? "; " : "") + describe(groups[i]);
  return msg;
}

}  // namespace

std::vector<ModelProblemGroup> group_problems(const std::vector<ModelProblem>& problems) {
  std::vector<ModelProblemGroup> groups;
  for (const ModelProblem& p : problems) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const ModelProblemGroup& g) { return g.kind == p.kind; });
    if (it == groups.end()) {
      groups.push_back({p.kind, 1, p});
    } else {
      ++it->count;
    }
  }
  return groups;
}

std::string describe(const ModelProblemGroup& group) {
  std::string line = group.count == 1 ? group.example.message
                                      : group.kind + " on " + std::to_string(group.count) +
                                            " tensors (e.g. " + group.example.message + ")";
  if (!group.example.remedy.empty()) line += "; to serve it: " + group.example.remedy;
  return line;
}

Model::~Model() = default;

std::vector<ModelProblem> Model::check(const GgufFile& file) {
  std::vector<ModelProblem> problems;
  ModelConfig config;
  try {
    config = read_model_config(file);
  } catch (const ModelError& e) {
    problems.push_back({"model metadata", "", e.what(), ""});
    return problems;
  }
  bind_weights(file, config, problems);
  try {
    Tokenizer::from_gguf(file);
  } catch (const std::exception& e) {
    problems.push_back({"tokenizer", "", std::string("tokenizer: ") + e.what(), ""});
  }
  return problems;
}

std::unique_ptr<Model> Model::load(const std::filesystem::path& path, const LoadOptions& options) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = GgufFile::open(path);
  m->config_ = read_model_config(*m->file_);
  std::vector<ModelProblem> problems;
  m->weights_ = std::make_unique<ModelWeights>(bind_weights(*m->file_, m->config_, problems));
  if (!problems.empty()) throw ModelError(join_problems(*m->file_, problems));
  m->tokenizer_ = Tokenizer::from_gguf(*m->file_);
  if (m->tokenizer_->n_vocab() != m->config_.n_vocab)
    throw ModelError(path.filename().string() + ": the tokenizer has " +
                     std::to_string(m->tokenizer_->n_vocab()) + " tokens but the embedding has " +
                     std::to_string(m->config_.n_vocab) + " rows");

  m->n_ctx_ = options.n_ctx > 0 ? options.n_ctx : m->config_.n_ctx_train;
  for (const GgufTensor& t : m->file_->tensors()) {
    m->n_params_ += t.elements();
    m->weight_bytes_ += t.bytes;
  }
  if (options.lock_resident)
    if (std::string warning = m->file_->lock_resident(); !warning.empty())
      m->warnings_.push_back(std::move(warning));
  return m;
}

}  // namespace ghostline::engine
