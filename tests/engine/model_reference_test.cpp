// The forward pass against llama.cpp's logits on the shared reference models
// (../shared/data/models, tolerances from ../shared/data/README.md).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "engine/model/fim.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {
namespace {

const std::string kModels = "../shared/data/models/";

struct ReferenceCase {
  std::string text;
  std::vector<int32_t> ids;
  // llama.cpp's 20 highest logits at every position, as (id, logit).
  std::vector<std::vector<std::pair<int32_t, float>>> topk;
  std::vector<float> last_logits;
  std::vector<int32_t> greedy;
};

std::vector<ReferenceCase> read_cases(const std::string& name) {
  std::ifstream in(kModels + name + ".logits.json");
  if (!in) return {};
  const auto j = nlohmann::json::parse(in);
  std::vector<ReferenceCase> cases;
  for (const auto& c : j.at("cases")) {
    ReferenceCase rc;
    rc.text = c.at("text").get<std::string>();
    rc.ids = c.at("ids").get<std::vector<int32_t>>();
    for (const auto& pos : c.at("topk")) {
      auto& row = rc.topk.emplace_back();
      for (const auto& e : pos) row.emplace_back(e.at(0).get<int32_t>(), e.at(1).get<float>());
    }
    rc.last_logits = c.at("last_logits").get<std::vector<float>>();
    rc.greedy = c.at("greedy").get<std::vector<int32_t>>();
    cases.push_back(std::move(rc));
  }
  return cases;
}

double stddev(std::span<const float> v) {
  double mean = 0, sq = 0;
  for (float x : v) mean += x;
  mean /= double(v.size());
  for (float x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / double(v.size()));
}

struct ModelSpec {
  std::string name;
  double max_diff_in_std;    // bound on max |ours - llama.cpp| of last_logits, in std units
  double min_top1_fraction;  // of all positions of all cases
  bool greedy_must_match;
  BackendKind backend;
};

std::string spec_name(const testing::TestParamInfo<ModelSpec>& info) {
  std::string s =
      info.param.name + (info.param.backend == BackendKind::Cpu ? "_fast" : "_reference");
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

class ReferenceLogitsTest : public testing::TestWithParam<ModelSpec> {};

TEST_P(ReferenceLogitsTest, MatchesLlamaCpp) {
  const ModelSpec& spec = GetParam();
  const auto cases = read_cases(spec.name);
  ASSERT_FALSE(cases.empty()) << "missing " << kModels << spec.name << ".logits.json";
  auto model = Model::load(kModels + spec.name + ".gguf", {.lock_resident = false});
  const ModelConfig& c = model->config();
  KvBlockPool pool(c.n_layer, c.kv_dim(), 8 << 20);
  Generator gen(*model, pool, {.threads = 2, .backend = spec.backend, .chunk_tokens = 16});

  int positions = 0, top1_same = 0, strict_same = 0;
  double worst = 0;
  for (const ReferenceCase& rc : cases) {
    KvSequence seq;
    const int n = static_cast<int>(rc.ids.size());
    ASSERT_TRUE(gen.forward(seq, rc.ids, LogitsRequest::last_n_of(n)));
    // A position agrees when our top-1 is llama.cpp's, or when llama.cpp ranks it within the
    // logit tolerance of its own top-1 (a near-tie that differences inside the tolerance may
    // order either way; the F16 file has one, 0.0012 apart).
    const double tie = spec.max_diff_in_std * stddev(rc.last_logits);
    for (int p = 0; p < n; ++p) {
      ++positions;
      const auto& ref = rc.topk[size_t(p)];
      const int32_t ours = argmax(gen.logits(p));
      bool agrees = ours == ref[0].first;
      strict_same += agrees;
      for (const auto& [id, logit] : ref)
        if (id == ours && logit >= ref[0].second - tie) agrees = true;
      top1_same += agrees;
    }
    const auto last = gen.logits(n - 1);
    ASSERT_EQ(last.size(), rc.last_logits.size());
    double max_diff = 0;
    for (size_t i = 0; i < last.size(); ++i)
      max_diff = std::max(max_diff, std::abs(double(last[i]) - rc.last_logits[i]));
    const double in_std = max_diff / stddev(rc.last_logits);
    worst = std::max(worst, in_std);
    EXPECT_LE(in_std, spec.max_diff_in_std) << "max |diff| " << max_diff;

    // Greedy continuation, one decode step at a time (on the fast path only: the reference
    // path's logits were checked above, and its steps are slow).
    if (spec.backend == BackendKind::Reference) {
      pool.release(seq);
      continue;
    }
    std::vector<int32_t> greedy;
    int32_t next = argmax(last);
    for (size_t i = 0; i < rc.greedy.size(); ++i) {
      greedy.push_back(next);
      const int32_t step[1] = {next};
      ASSERT_TRUE(gen.forward(seq, step));
      next = argmax(gen.logits(0));
    }
    if (spec.greedy_must_match) {
      EXPECT_EQ(greedy, rc.greedy);
    }
    pool.release(seq);
  }
  // F16 must agree everywhere (near-ties allowed as above); quantized files at the README's
  // 90% of positions, counted strictly.
  const double fraction =
      double(spec.min_top1_fraction < 1.0 ? strict_same : top1_same) / positions;
  EXPECT_GE(fraction, spec.min_top1_fraction);
  RecordProperty("max_diff_in_std", std::to_string(worst));
  RecordProperty("top1_fraction", std::to_string(fraction));
  std::printf("%s: max |diff| %.4f std, top-1 identical at %d/%d positions (%d/%d with ties)\n",
              spec.name.c_str(), worst, strict_same, positions, top1_same, positions);
  EXPECT_EQ(pool.stats().blocks_used, 0);
}

// F16: the README's bound (0.01 std) with top-1 and greedy identical everywhere. Quantized
// weights: 0.15 std and top-1 at >= 90% of positions (llama.cpp also quantizes activations).
INSTANTIATE_TEST_SUITE_P(
    SharedModels, ReferenceLogitsTest,
    testing::Values(ModelSpec{"ref-llama-spm-f16", 0.01, 1.0, true, BackendKind::Reference},
                    ModelSpec{"ref-llama-spm-f16", 0.01, 1.0, true, BackendKind::Cpu},
                    ModelSpec{"ref-llama-spm-q4_k_m", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-llama-spm-q4_k_m", 0.15, 0.9, false, BackendKind::Cpu},
                    ModelSpec{"ref-qwen2-dscoder-q8_0", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-qwen2-dscoder-q8_0", 0.15, 0.9, false, BackendKind::Cpu},
                    ModelSpec{"ref-qwen2-dscoder-q4_0", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-qwen2-dscoder-q4_0", 0.15, 0.9, false, BackendKind::Cpu},
                    ModelSpec{"ref-qwen2-dscoder-q6_k", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-qwen2-dscoder-q6_k", 0.15, 0.9, false, BackendKind::Cpu},
                    ModelSpec{"ref-qwen2-dscoder-q4_1", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-qwen2-dscoder-q4_1", 0.15, 0.9, false, BackendKind::Cpu},
                    ModelSpec{"ref-qwen2-dscoder-q5_0", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-qwen2-dscoder-q5_0", 0.15, 0.9, false, BackendKind::Cpu},
                    ModelSpec{"ref-qwen2-dscoder-q5_1", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-qwen2-dscoder-q5_1", 0.15, 0.9, false, BackendKind::Cpu},
                    ModelSpec{"ref-qwen2-dscoder-iq4_nl", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-qwen2-dscoder-iq4_nl", 0.15, 0.9, false, BackendKind::Cpu},
                    ModelSpec{"ref-qwen2-dscoder-iq4_xs", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-qwen2-dscoder-iq4_xs", 0.15, 0.9, false, BackendKind::Cpu},
                    // Q4_K_M with the Q5_0 / Q8_0 / Q6_K fallbacks of rows that are not a
                    // multiple of 256, as in Qwen2.5-Coder-0.5B.
                    ModelSpec{"ref-qwen2-w384-q4_k_m", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-qwen2-w384-q4_k_m", 0.15, 0.9, false, BackendKind::Cpu},
                    // LayerNorm with biases, biased attention and GELU MLP, NeoX RoPE.
                    ModelSpec{"ref-starcoder2-q8_0", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-starcoder2-q8_0", 0.15, 0.9, false, BackendKind::Cpu},
                    // Scaled embeddings, GeGLU, RMSNorm weights applied as stored.
                    ModelSpec{"ref-gemma-q8_0", 0.15, 0.9, false, BackendKind::Reference},
                    ModelSpec{"ref-gemma-q8_0", 0.15, 0.9, false, BackendKind::Cpu}),
    spec_name);

// The prompts' ids are llama.cpp's tokenization of their text with the BOS the model adds:
// ours must be the same, or the logits above would be checked on inputs no user produces.
class ReferenceTokensTest : public testing::TestWithParam<std::string> {};

TEST_P(ReferenceTokensTest, PromptsTokenizeAsLlamaCpp) {
  const auto cases = read_cases(GetParam());
  ASSERT_FALSE(cases.empty()) << "missing " << kModels << GetParam() << ".logits.json";
  auto model = Model::load(kModels + GetParam() + ".gguf", {.lock_resident = false});
  const Tokenizer& tok = model->tokenizer();
  for (const ReferenceCase& rc : cases) {
    std::vector<int32_t> ids;
    if (tok.specials().add_bos) ids.push_back(*tok.specials().bos);
    const auto text_ids = tok.encode(rc.text);
    ids.insert(ids.end(), text_ids.begin(), text_ids.end());
    EXPECT_EQ(ids, rc.ids) << rc.text;
  }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ReferenceTokensTest,
                         testing::Values("ref-llama-spm-f16", "ref-qwen2-dscoder-q8_0",
                                         "ref-qwen2-w384-q4_k_m", "ref-starcoder2-q8_0",
                                         "ref-gemma-q8_0"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

// StarCoder2 files name no FIM tokens in their metadata; they are found by their texts, and
// the file separator ends a completion.
TEST(ReferenceFim, StarCoder2FindsItsFimTokensByText) {
  auto model = Model::load(kModels + "ref-starcoder2-q8_0.gguf", {.lock_resident = false});
  const FimTemplate fim = fim_template(*model);
  EXPECT_EQ(fim.mode, FimMode::Psm);
  EXPECT_EQ(fim.tokens.pre, 1);  // <fim_prefix>
  EXPECT_EQ(fim.tokens.mid, 2);  // <fim_middle>
  EXPECT_EQ(fim.tokens.suf, 3);  // <fim_suffix>
  const Tokenizer& tok = model->tokenizer();
  ASSERT_TRUE(tok.find_token("<file_sep>"));
  EXPECT_EQ(fim.tokens.file_sep, *tok.find_token("<file_sep>"));
  EXPECT_TRUE(tok.is_end_of_generation(*tok.find_token("<file_sep>")));
  EXPECT_TRUE(tok.is_end_of_generation(4));  // <fim_pad>
  EXPECT_FALSE(fim.tokens.add_bos);
}

// The gemma reference carries a llama SentencePiece vocabulary without FIM tokens: it completes
// left to right, with BOS. (CodeGemma's own FIM texts are tested on a vocabulary that has them,
// in tokenizer_test.cpp.)
TEST(ReferenceFim, GemmaReferenceWithoutFimTokensIsPrefixOnly) {
  auto model = Model::load(kModels + "ref-gemma-q8_0.gguf", {.lock_resident = false});
  const FimTemplate fim = fim_template(*model);
  EXPECT_EQ(fim.mode, FimMode::PrefixOnly);
  EXPECT_TRUE(fim.tokens.add_bos);
  EXPECT_EQ(fim.tokens.bos, 1);
}

}  // namespace
}  // namespace ghostline::engine
