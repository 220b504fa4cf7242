// Random-weight model files (for benchmarks) load, tokenize and run like real ones.
#include "engine/model/random_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

#include "engine/gguf/quant.h"
#include "engine/generator.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {
namespace {

namespace fs = std::filesystem;

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

  KvBlockPool pool(c.n_layer, c.kv_dim(), 1 << 20);
  Generator fast(*model, pool, {.threads = 2, .backend = BackendKind::Cpu, .chunk_tokens = 16});
  Generator ref(*model, pool, {.threads = 1, .backend = BackendKind::Reference, .chunk_tokens = 64});
  KvSequence a, b;
  ASSERT_TRUE(fast.forward(a, ids));
  ASSERT_TRUE(ref.forward(b, ids));
  double max_diff = 0, mean = 0, sq = 0;
  const auto r = ref.logits(0);
  for (float x : r) mean += x;
  mean /= double(r.size());
  for (float x : r) sq += (x - mean) * (x - mean);
  for (size_t i = 0; i < r.size(); ++i)
    max_diff = std::max(max_diff, std::abs(double(fast.logits(0)[i]) - r[i]));
  // Quantized weights are multiplied with quantized activations on the fast path.
  const double bound = GetParam() == GgmlType::F16 ? 1e-3 : 0.1;
  EXPECT_LE(max_diff / std::sqrt(sq / double(r.size())), bound);
  pool.release(a);
  pool.release(b);
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
  cpu::dequantize_row(t->type, t->data, row.data(), 64);
  double sum_abs = 0;
  for (float v : row) {
    EXPECT_LE(std::abs(v), 0.0351);
    sum_abs += std::abs(v);
  }
  EXPECT_GT(sum_abs / 64, 0.005);  // not all zero
}

INSTANTIATE_TEST_SUITE_P(Types, RandomModelTest,
                         testing::Values(GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0),
                         [](const auto& info) { return std::string(ggml_type_name(info.param)); });

}  // namespace
}  // namespace ghostline::engine
