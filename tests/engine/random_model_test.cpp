// Random-weight model files (for benchmarks) load, tokenize and run like real ones.
#include "engine/model/random_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>

#include "engine/generator.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/quant.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {
namespace {

namespace fs = std::filesystem;

// How far the fast path's last logits are from the reference path's over `ids`, in standard
// deviations of the reference logits (infinity when a forward fails).
double fast_path_deviation(const Model& model, const std::vector<int32_t>& ids) {
  const ModelConfig& c = model.config();
  KvBlockPool pool(c.n_layer, c.kv_dim(), 1 << 20);
  Generator fast(model, pool, {.threads = 2, .backend = BackendKind::Cpu, .chunk_tokens = 16});
  Generator ref(model, pool, {.threads = 1, .backend = BackendKind::Reference, .chunk_tokens = 64});
  KvSequence a, b;
  const bool ran = fast.forward(a, ids) && ref.forward(b, ids);
  double deviation = std::numeric_limits<double>::infinity();
  if (ran) {
    const auto r = ref.logits(0);
    double mean = 0, sq = 0, max_diff = 0;
    for (float x : r) mean += x;
    mean /= double(r.size());
    for (float x : r) sq += (x - mean) * (x - mean);
    for (size_t i = 0; i < r.size(); ++i)
      max_diff = std::max(max_diff, std::abs(double(fast.logits(0)[i]) - r[i]));
    deviation = max_diff / std::sqrt(sq / double(r.size()));
  }
  pool.release(a);
  pool.release(b);
  return deviation;
}

class RandomModelTest : public testing::TestWithParam<GgmlType> {
 protected:
  RandomModelTest()
      : path_(fs::temp_directory_path() /
              ("ghostline-random-" + std::to_string(::getpid()) + ".gguf")) {}
  ~RandomModelTest() override { fs::remove(path_); }
  fs::path path_;
};

TEST_P(RandomModelTest, LoadsAndFastPathMatchesReference) {
  RandomModelSpec spec;
  spec.n_vocab = 700;
  spec.n_embd = 64;
  spec.n_layer = 2;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = 96;
  spec.n_ctx = 256;
  spec.type = GetParam();
  write_random_model(path_, spec);

  auto model = Model::load(path_, {.lock_resident = false});
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.arch, "qwen2");
  EXPECT_EQ(c.n_vocab, 700);
  EXPECT_TRUE(c.tied_output);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_EQ(model->file().tensor("blk.1.ffn_down.weight")->type, GetParam());
  const Tokenizer& tok = model->tokenizer();
  ASSERT_TRUE(tok.specials().fim_pre && tok.specials().fim_suf && tok.specials().fim_mid);
  ASSERT_TRUE(tok.specials().eos);
  const std::string text = "def add(a, b):\n    return a + b\n";
  const auto ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids), text);

  // Quantized weights are multiplied with quantized activations on the fast path.
  const double bound = GetParam() == GgmlType::F16 ? 1e-3 : 0.1;
  EXPECT_LE(fast_path_deviation(*model, ids), bound);
}

TEST_P(RandomModelTest, QuantizedWeightsDecodeCloseToTheirSource) {
  // The writer's values are uniform in about [-0.035, 0.035]; dequantized rows stay there.
  RandomModelSpec spec;
  spec.n_vocab = 300;
  spec.n_embd = 64;
  spec.n_layer = 1;
  spec.n_head = 2;
  spec.n_head_kv = 1;
  spec.n_ff = 64;
  spec.type = GetParam();
  write_random_model(path_, spec);
  auto file = GgufFile::open(path_);
  const GgufTensor* t = file->tensor("blk.0.attn_q.weight");
  ASSERT_NE(t, nullptr);
  std::vector<float> row(64);
  gguf::dequantize_row(t->type, t->data, row.data(), 64);
  double sum_abs = 0;
  for (float v : row) {
    EXPECT_LE(std::abs(v), 0.0351);
    sum_abs += std::abs(v);
  }
  EXPECT_GT(sum_abs / 64, 0.005);  // not all zero
}

INSTANTIATE_TEST_SUITE_P(Types, RandomModelTest,
                         testing::Values(GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0,
                                         GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                         GgmlType::IQ4_NL),
                         [](const auto& info) { return std::string(ggml_type_name(info.param)); });

// A Q4_K_M file of the shape of ../shared/data's w384 reference (384-wide rows, as
// Qwen2.5-Coder-0.5B's 896 not a multiple of 256) gets, tensor by tensor, the types
// llama-quantize gave that file.
TEST(RandomModelMix, Q4KMGivesTheTypesLlamaQuantizeWrites) {
  const std::string ref_path = "../shared/data/models/ref-qwen2-w384-q4_k_m.gguf";
  auto ref = GgufFile::open(ref_path);
  RandomModelSpec spec;
  spec.n_vocab = 700;
  spec.n_embd = 384;
  spec.n_layer = 2;
  spec.n_head = 6;
  spec.n_head_kv = 2;
  spec.n_ff = 1024;
  spec.n_ctx = 256;
  spec.type = GgmlType::Q4_K;
  spec.k_m_mix = true;
  const fs::path path =
      fs::temp_directory_path() / ("ghostline-q4km-" + std::to_string(::getpid()) + ".gguf");
  write_random_model(path, spec);
  auto file = GgufFile::open(path);
  int matrices = 0;
  for (const GgufTensor& t : file->tensors()) {
    if (t.shape.size() != 2) continue;
    const GgufTensor* r = ref->tensor(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(ggml_type_name(t.type), ggml_type_name(r->type)) << t.name;
    ++matrices;
  }
  EXPECT_EQ(matrices, 15);  // the tied embedding and 7 per layer
  // The preset is recorded as llama-quantize records it.
  EXPECT_EQ(file->get_int("general.file_type"), ref->get_int("general.file_type"));

  // The mix loads, and the fast path agrees with the reference one.
  auto model = Model::load(path, {.lock_resident = false});
  EXPECT_LE(
      fast_path_deviation(*model, model->tokenizer().encode("def add(a, b):\n    return a + b\n")),
      0.1);
  fs::remove(path);
}

TEST(RandomModelMix, RowsNotAMultipleOf256FallBackLikeLlamaQuantize) {
  RandomModelSpec spec;
  spec.n_embd = 896;
  spec.n_ff = 4864;
  spec.n_layer = 24;
  spec.type = GgmlType::Q4_K;
  spec.k_m_mix = true;
  EXPECT_EQ(random_model_tensor_type(spec, "token_embd.weight", 0, 896), GgmlType::Q8_0);
  EXPECT_EQ(random_model_tensor_type(spec, "blk.0.attn_q.weight", 0, 896), GgmlType::Q5_0);
  EXPECT_EQ(random_model_tensor_type(spec, "blk.0.attn_v.weight", 0, 896), GgmlType::Q8_0);
  EXPECT_EQ(random_model_tensor_type(spec, "blk.3.attn_v.weight", 3, 896), GgmlType::Q5_0);
  EXPECT_EQ(random_model_tensor_type(spec, "blk.5.ffn_down.weight", 5, 4864), GgmlType::Q6_K);
  EXPECT_EQ(random_model_tensor_type(spec, "blk.4.ffn_down.weight", 4, 4864), GgmlType::Q4_K);
  spec.type = GgmlType::Q5_K;  // Q5_K_M: the same mix over Q5_K, which falls back to Q5_1
  EXPECT_EQ(random_model_tensor_type(spec, "token_embd.weight", 0, 896), GgmlType::Q8_0);
  EXPECT_EQ(random_model_tensor_type(spec, "blk.0.attn_q.weight", 0, 896), GgmlType::Q5_1);
  EXPECT_EQ(random_model_tensor_type(spec, "blk.5.ffn_down.weight", 5, 4864), GgmlType::Q6_K);
  EXPECT_EQ(random_model_tensor_type(spec, "blk.4.ffn_down.weight", 4, 4864), GgmlType::Q5_K);
  spec.k_m_mix = false;
  spec.type = GgmlType::IQ4_XS;
  EXPECT_EQ(random_model_tensor_type(spec, "blk.0.attn_q.weight", 0, 896), GgmlType::IQ4_NL);
  EXPECT_EQ(random_model_tensor_type(spec, "blk.0.ffn_down.weight", 0, 4864), GgmlType::IQ4_XS);
}

// K-quant and IQ4_XS files (rows a multiple of 256): the fast path agrees with the reference.
class RandomModelSuperBlockTest : public testing::TestWithParam<GgmlType> {};

TEST_P(RandomModelSuperBlockTest, FastPathMatchesReference) {
  RandomModelSpec spec;
  spec.n_vocab = 400;
  spec.n_embd = 256;
  spec.n_layer = 2;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = 512;
  spec.n_ctx = 256;
  spec.type = GetParam();
  const fs::path path =
      fs::temp_directory_path() / ("ghostline-random-k-" + std::to_string(::getpid()) + ".gguf");
  write_random_model(path, spec);
  auto model = Model::load(path, {.lock_resident = false});
  EXPECT_EQ(model->file().tensor("blk.1.attn_q.weight")->type, GetParam());
  EXPECT_LE(fast_path_deviation(*model, model->tokenizer().encode("int main() { return 0; }\n")),
            0.1);
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Types, RandomModelSuperBlockTest,
                         testing::Values(GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                                         GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS),
                         [](const auto& info) { return std::string(ggml_type_name(info.param)); });

// make-model's starcoder2 and gemma shapes load as those architectures and run alike on both
// paths.
class RandomModelArchTest : public testing::TestWithParam<std::string> {};

TEST_P(RandomModelArchTest, LoadsAsItsArchitectureAndFastPathMatchesReference) {
  RandomModelSpec spec;
  spec.arch = GetParam();
  spec.n_vocab = 500;
  spec.n_embd = 128;
  spec.n_layer = 2;
  spec.n_head = 4;
  spec.n_head_kv = 1;
  spec.n_ff = 320;
  spec.n_ctx = 256;
  spec.type = GgmlType::Q8_0;
  const fs::path path = fs::temp_directory_path() /
                        ("ghostline-random-" + spec.arch + std::to_string(::getpid()) + ".gguf");
  write_random_model(path, spec);
  auto model = Model::load(path, {.lock_resident = false});
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.arch, spec.arch);
  if (spec.arch == "starcoder2") {
    EXPECT_EQ(c.norm, NormKind::Layer);
    EXPECT_EQ(c.ffn, FfnKind::Gelu);
    EXPECT_TRUE(c.qkv_bias && c.out_bias && c.ffn_bias && c.norm_bias);
    EXPECT_EQ(model->file().tensor("blk.0.ffn_gate.weight"), nullptr);
  } else {
    EXPECT_EQ(c.ffn, FfnKind::GeGlu);
    EXPECT_FLOAT_EQ(c.embd_scale, std::sqrt(128.0f));
    EXPECT_EQ(c.head_dim, 32);
  }
  EXPECT_TRUE(Model::check(model->file()).empty());
  EXPECT_LE(fast_path_deviation(*model, model->tokenizer().encode("fn main() { let x = 1; }\n")),
            0.1);
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Architectures, RandomModelArchTest,
                         testing::Values("starcoder2", "gemma"),
                         [](const auto& info) { return info.param; });
}  // namespace
}  // namespace ghostline::engine
