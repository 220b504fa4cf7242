// Model loading: hyper-parameters from metadata, tensor binding, and the errors a user sees
// for files Ghostline cannot serve. Files are written with the GGUF test writer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>

#include "engine/generator.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model_weights.h"
#include "gguf_test_writer.h"

namespace ghostline::engine {
namespace {

namespace fs = std::filesystem;
using testing::GgufValue;
using testing::GgufWriter;

// A tiny llama-family model: embd 32, 2 layers, 4 heads, 2 KV heads, ffn 48, 8 tokens.
struct TinyModel {
  std::string arch = "llama";
  int n_embd = 32, n_layer = 2, n_head = 4, n_head_kv = 2, n_ff = 48, n_vocab = 8;
  bool qkv_bias = false, tied = false;
  int head_dim = 0;  // written as attention.key_length/value_length when set
  GgmlType matrix_type = GgmlType::F32;
  // Edits applied to the tensor list before writing (drop or reshape one to test errors).
  std::function<bool(std::string& name, std::vector<int64_t>& shape, GgmlType& type)> edit;
  std::vector<std::string> drop_keys;
  float rope_linear_factor = 0;  // writes rope.scaling.type "linear" when set

  std::string build(uint32_t seed = 1) const {
    GgufWriter w;
    auto key = [&](const std::string& k, GgufValue v) {
      if (std::find(drop_keys.begin(), drop_keys.end(), k) == drop_keys.end())
        w.add(k, std::move(v));
    };
    key("general.architecture", GgufValue::string(arch));
    key(arch + ".context_length", GgufValue::u32(128));
    key(arch + ".embedding_length", GgufValue::u32(uint32_t(n_embd)));
    key(arch + ".block_count", GgufValue::u32(uint32_t(n_layer)));
    key(arch + ".feed_forward_length", GgufValue::u32(uint32_t(n_ff)));
    key(arch + ".attention.head_count", GgufValue::u32(uint32_t(n_head)));
    key(arch + ".attention.head_count_kv", GgufValue::u32(uint32_t(n_head_kv)));
    key(arch +
            (starcoder2() ? ".attention.layer_norm_epsilon" : ".attention.layer_norm_rms_epsilon"),
        GgufValue::f32(1e-5f));
    if (head_dim > 0) {
      key(arch + ".attention.key_length", GgufValue::u32(uint32_t(head_dim)));
      key(arch + ".attention.value_length", GgufValue::u32(uint32_t(head_dim)));
    }
    key(arch + ".rope.freq_base", GgufValue::f32(10000.0f));
    if (rope_linear_factor > 0) {
      key(arch + ".rope.scaling.type", GgufValue::string("linear"));
      key(arch + ".rope.scaling.factor", GgufValue::f32(rope_linear_factor));
    }
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    for (int i = 3; i < n_vocab; ++i) tokens.push_back(std::string(1, char('a' + i - 3)));
    key("tokenizer.ggml.model", GgufValue::string("llama"));
    key("tokenizer.ggml.tokens", GgufValue::strings(tokens));
    std::vector<float> scores(size_t(n_vocab), 0.0f);
    std::vector<int32_t> types(size_t(n_vocab), 1);
    types[0] = 2;
    types[1] = types[2] = 3;
    key("tokenizer.ggml.scores", GgufValue::f32s(scores));
    key("tokenizer.ggml.token_type", GgufValue::i32s(types));
    key("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
    key("tokenizer.ggml.eos_token_id", GgufValue::u32(2));

    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.3f);
    const int hd = head_dim > 0 ? head_dim : n_embd / n_head, kv = n_head_kv * hd,
              q = n_head * hd;
    auto tensor = [&](std::string name, std::vector<int64_t> shape, bool is_vector) {
      GgmlType type = is_vector ? GgmlType::F32 : matrix_type;
      if (edit && !edit(name, shape, type)) return;
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::string data(ggml_row_bytes(type, n), '\0');
      if (type == GgmlType::F32) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = is_vector ? 1.0f + 0.1f * normal(rng) : normal(rng);
        std::memcpy(data.data(), v.data(), data.size());
      }
      w.add_tensor(std::move(name), type, std::move(shape), std::move(data));
    };
    tensor("token_embd.weight", {n_embd, n_vocab}, false);
    tensor("output_norm.weight", {n_embd}, true);
    if (starcoder2()) tensor("output_norm.bias", {n_embd}, true);
    if (!tied) tensor("output.weight", {n_embd, n_vocab}, false);
    for (int l = 0; l < n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      tensor(p + "attn_norm.weight", {n_embd}, true);
      if (starcoder2()) tensor(p + "attn_norm.bias", {n_embd}, true);
      tensor(p + "attn_q.weight", {n_embd, q}, false);
      tensor(p + "attn_k.weight", {n_embd, kv}, false);
      tensor(p + "attn_v.weight", {n_embd, kv}, false);
      if (qkv_bias || starcoder2()) {
        tensor(p + "attn_q.bias", {q}, true);
        tensor(p + "attn_k.bias", {kv}, true);
        tensor(p + "attn_v.bias", {kv}, true);
      }
      tensor(p + "attn_output.weight", {q, n_embd}, false);
      if (starcoder2()) tensor(p + "attn_output.bias", {n_embd}, true);
      tensor(p + "ffn_norm.weight", {n_embd}, true);
      if (starcoder2()) {
        tensor(p + "ffn_norm.bias", {n_embd}, true);
        tensor(p + "ffn_up.weight", {n_embd, n_ff}, false);
        tensor(p + "ffn_up.bias", {n_ff}, true);
        tensor(p + "ffn_down.weight", {n_ff, n_embd}, false);
        tensor(p + "ffn_down.bias", {n_embd}, true);
        continue;
      }
      tensor(p + "ffn_gate.weight", {n_embd, n_ff}, false);
      tensor(p + "ffn_up.weight", {n_embd, n_ff}, false);
      tensor(p + "ffn_down.weight", {n_ff, n_embd}, false);
    }
    return w.build();
  }
  // LayerNorm with biases, biases on every projection, a GELU MLP without gate.
  bool starcoder2() const { return arch == "starcoder2"; }
};

class ModelLoadTest : public ::testing::Test {
 protected:
  ModelLoadTest() {
    dir_ = fs::temp_directory_path() / ("ghostline-model-load-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  ~ModelLoadTest() override { fs::remove_all(dir_); }

  fs::path write(const TinyModel& m, const std::string& name = "model.gguf") {
    const fs::path p = dir_ / name;
    GgufWriter::write_file(p, m.build());
    return p;
  }
  // The ModelError message of loading `m`, or "" when it loads.
  std::string load_error(const TinyModel& m) {
    try {
      Model::load(write(m), {.lock_resident = false});
    } catch (const ModelError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(ModelLoadTest, ReadsTheConfigOfATinyLlama) {
  auto model = Model::load(write(TinyModel{}), {.lock_resident = false});
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.n_embd, 32);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.kv_dim(), 16);
  EXPECT_EQ(c.n_ff, 48);
  EXPECT_EQ(c.n_vocab, 8);
  EXPECT_EQ(c.n_ctx_train, 128);
  EXPECT_FALSE(c.rope_neox);
  EXPECT_FALSE(c.tied_output);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(model->n_ctx(), 128);
  EXPECT_EQ(model->n_params(),
            2 * 32 * 8 + 32 + 2 * (2 * 32 + 32 * 32 * 2 + 2 * 32 * 16 + 3 * 32 * 48));
}

TEST_F(ModelLoadTest, Qwen2WithBiasesAndTiedOutputUsesNeoxRope) {
  TinyModel m;
  m.arch = "qwen2";
  m.qkv_bias = true;
  m.tied = true;
  auto model = Model::load(write(m), {.lock_resident = false});
  EXPECT_TRUE(model->config().rope_neox);
  EXPECT_TRUE(model->config().tied_output);
  EXPECT_TRUE(model->config().qkv_bias);
  EXPECT_TRUE(Model::check(model->file()).empty());
}

TEST_F(ModelLoadTest, StarCoder2HasLayerNormBiasesAndAGeluMlp) {
  TinyModel m;
  m.arch = "starcoder2";
  m.tied = true;
  auto model = Model::load(write(m), {.lock_resident = false});
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.norm, NormKind::Layer);
  EXPECT_EQ(c.ffn, FfnKind::Gelu);
  EXPECT_TRUE(c.rope_neox);
  EXPECT_TRUE(c.qkv_bias && c.out_bias && c.ffn_bias && c.norm_bias);
  EXPECT_FLOAT_EQ(c.embd_scale, 1.0f);
  const ModelWeights& w = model->weights();
  EXPECT_EQ(w.layers[1].w_gate, nullptr);
  EXPECT_NE(w.layers[1].b_down, nullptr);
  EXPECT_NE(w.output_norm_b, nullptr);
  EXPECT_TRUE(Model::check(model->file()).empty());
}

TEST_F(ModelLoadTest, StarCoder2MissingBiasOfOneLayerIsNamed) {
  TinyModel m;
  m.arch = "starcoder2";
  m.edit = [](std::string& name, auto&, auto&) { return name != "blk.1.ffn_up.bias"; };
  const std::string e = load_error(m);
  EXPECT_NE(e.find("tensor 'blk.1.ffn_up.bias' is missing"), std::string::npos) << e;
}

TEST_F(ModelLoadTest, GemmaScalesEmbeddingsAndTakesHeadDimFromKeyLength) {
  TinyModel m;
  m.arch = "gemma";
  m.tied = true;
  m.head_dim = 16;  // 4 heads of 16 on a width of 32
  auto model = Model::load(write(m), {.lock_resident = false});
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.norm, NormKind::Rms);
  EXPECT_EQ(c.ffn, FfnKind::GeGlu);
  EXPECT_TRUE(c.rope_neox);  // HF Gemma's rotate_half; the converter does not permute Q/K
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.q_dim(), 64);
  EXPECT_EQ(c.kv_dim(), 32);
  EXPECT_FLOAT_EQ(c.embd_scale, std::sqrt(32.0f));
  EXPECT_TRUE(c.tied_output);
}

TEST_F(ModelLoadTest, ReadsLinearRopeScaling) {
  TinyModel m;
  EXPECT_FLOAT_EQ(read_model_config(*GgufFile::open(write(m))).rope_freq_scale, 1.0f);
  m.rope_linear_factor = 4.0f;
  EXPECT_FLOAT_EQ(read_model_config(*GgufFile::open(write(m))).rope_freq_scale, 0.25f);
}

TEST_F(ModelLoadTest, UnsupportedArchitectureNamesTheSupportedOnes) {
  TinyModel m;
  m.arch = "gptneox";
  const std::string e = load_error(m);
  EXPECT_NE(e.find("'gptneox' is not supported"), std::string::npos) << e;
  EXPECT_NE(e.find("llama, qwen2, starcoder2, gemma"), std::string::npos) << e;
}

TEST_F(ModelLoadTest, MissingTensorIsNamed) {
  TinyModel m;
  m.edit = [](std::string& name, auto&, auto&) { return name != "blk.1.ffn_up.weight"; };
  const std::string e = load_error(m);
  EXPECT_NE(e.find("tensor 'blk.1.ffn_up.weight' is missing"), std::string::npos) << e;
}

TEST_F(ModelLoadTest, WrongShapeIsNamedWithBothShapes) {
  TinyModel m;
  m.edit = [](std::string& name, std::vector<int64_t>& shape, auto&) {
    if (name == "blk.0.attn_k.weight") shape = {32, 32};
    return true;
  };
  const std::string e = load_error(m);
  EXPECT_NE(e.find("'blk.0.attn_k.weight' has shape {32, 32}, expected {32, 16}"),
            std::string::npos)
      << e;
}

TEST_F(ModelLoadTest, UnsupportedTensorTypeIsNamed) {
  TinyModel m;
  m.edit = [](std::string& name, std::vector<int64_t>&, GgmlType& type) {
    if (name == "blk.0.attn_q.weight") type = GgmlType::Q8_1;
    return true;
  };
  const std::string e = load_error(m);
  EXPECT_NE(e.find("'blk.0.attn_q.weight' has type Q8_1"), std::string::npos) << e;
  EXPECT_NE(e.find("re-quantize"), std::string::npos) << e;
}

TEST_F(ModelLoadTest, MissingHyperParameterIsNamed) {
  TinyModel m;
  m.drop_keys = {"llama.block_count"};
  const std::string e = load_error(m);
  EXPECT_NE(e.find("'llama.block_count' is missing"), std::string::npos) << e;
}

TEST_F(ModelLoadTest, CheckListsEveryProblem) {
  TinyModel m;
  m.edit = [](std::string& name, auto&, auto&) {
    return name != "output_norm.weight" && name != "blk.0.attn_v.weight";
  };
  auto file = GgufFile::open(write(m));
  const auto problems = Model::check(*file);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].subject, "output_norm.weight");
  EXPECT_EQ(problems[1].subject, "blk.0.attn_v.weight");
  EXPECT_NE(problems[0].message.find("output_norm.weight"), std::string::npos);
  // Both are missing tensors: one kind, reported once with the first as its example.
  const auto groups = group_problems(problems);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].count, 2);
  EXPECT_EQ(groups[0].example.subject, "output_norm.weight");
}

TEST_F(ModelLoadTest, RepeatedProblemsAreOneLinePerKindWithARemedy) {
  TinyModel m;
  m.n_ff = 64;  // whole blocks of 32 in every row
  // Every 2-D weight in an unsupported type, one norm missing: two kinds of problem.
  m.edit = [](std::string& name, std::vector<int64_t>& shape, GgmlType& type) {
    if (shape.size() == 2) type = GgmlType::Q8_1;
    return name != "output_norm.weight";
  };
  auto file = GgufFile::open(write(m));
  const auto problems = Model::check(*file);
  const auto groups = group_problems(problems);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].kind, "tensor type Q8_1");
  EXPECT_EQ(groups[0].example.subject, "token_embd.weight");
  EXPECT_GT(groups[0].count, 5);
  EXPECT_EQ(groups[1].kind, "missing tensor");
  EXPECT_EQ(groups[1].count, 1);
  const std::string line = describe(groups[0]);
  EXPECT_NE(line.find("on " + std::to_string(groups[0].count) + " tensors"), std::string::npos)
      << line;
  EXPECT_NE(line.find("re-quantize to one of F32, F16, Q4_0, Q4_1, Q5_0"), std::string::npos)
      << line;
  // The load error repeats neither: one clause per kind.
  const std::string e = load_error(m);
  EXPECT_EQ(e.find("blk.1.attn_q.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("tensor type Q8_1 on"), std::string::npos) << e;
}

// Odd shapes (head_dim 8, GQA 2:1, biases; gemma's head_dim 16 wider than n_embd / n_head)
// through both forward paths, for every architecture.
TEST_F(ModelLoadTest, TinyModelFastPathMatchesReference) {
  for (std::string arch : {"llama", "qwen2", "starcoder2", "gemma"}) {
    TinyModel m;
    m.arch = arch;
    m.qkv_bias = arch == "qwen2";
    m.tied = arch != "llama";
    if (arch == "gemma") m.head_dim = 16;
    auto model = Model::load(write(m, arch + ".gguf"), {.lock_resident = false});
    KvBlockPool pool(model->config().n_layer, model->config().kv_dim(), 1 << 20);
    Generator fast(*model, pool, {.threads = 2, .backend = BackendKind::Cpu, .chunk_tokens = 5});
    Generator ref(*model, pool,
                  {.threads = 1, .backend = BackendKind::Reference, .chunk_tokens = 64});
    std::vector<int32_t> ids;
    for (int i = 0; i < 37; ++i) ids.push_back((i * 5 + 1) % 8);
    KvSequence a, b;
    ASSERT_TRUE(fast.forward(a, ids, LogitsRequest::last_n_of(37)));
    ASSERT_TRUE(ref.forward(b, ids, LogitsRequest::last_n_of(37)));
    for (int p = 0; p < 37; ++p)
      for (int v = 0; v < 8; ++v)
        ASSERT_NEAR(fast.logits(p)[size_t(v)], ref.logits(p)[size_t(v)], 1e-3)
            << "position " << p << " token " << v << " " << arch;
    pool.release(a);
    pool.release(b);
  }
}

}  // namespace
}  // namespace ghostline::engine
