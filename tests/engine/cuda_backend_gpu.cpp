// The CUDA backend against the reference backend on the shared models, and speculative
// decoding on the device against plain decoding. These need a GPU: without one (or in a build
// without CUDA) each test is skipped with "no GPU", which ctest reports as Skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/cuda/cuda_math.h"
#include "engine/generator.h"
#include "engine/model/model_weights.h"
#include "engine/speculative.h"

namespace ghostline::engine {
namespace {

const std::filesystem::path kModels = "../shared/data/models";

#define SKIP_WITHOUT_GPU()                                                   \
  do {                                                                       \
    const CudaStatus status = cuda_status();                                 \
    if (!status.available) GTEST_SKIP() << "no GPU: " << status.description; \
  } while (0)

struct Engine {
  std::unique_ptr<Model> model;
  std::unique_ptr<KvBlockPool> pool;
  std::unique_ptr<Generator> gen;

  Engine(const std::filesystem::path& path, BackendKind kind, int chunk) {
    model = Model::load(path, {.lock_resident = false});
    const ModelConfig& c = model->config();
    pool = std::make_unique<KvBlockPool>(c.n_layer, c.kv_dim(), 16 << 20);
    gen = std::make_unique<Generator>(
        *model, *pool, GeneratorOptions{.threads = 1, .backend = kind, .chunk_tokens = chunk});
  }
};

// The shared reference models the CUDA backend implements (llama, qwen2) and the reference can
// load; others are listed so that a failure names them.
std::vector<std::filesystem::path> cuda_models() {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(kModels)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(kModels)) {
    if (entry.path().extension() != ".gguf") continue;
    try {
      auto model = Model::load(entry.path(), {.lock_resident = false});
      const std::string& arch = model->config().arch;
      if (arch == "llama" || arch == "qwen2") out.push_back(entry.path());
    } catch (const std::exception&) {
      // A file this build cannot serve at all: no backend runs it.
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::vector<int32_t>> prompts_of(const std::filesystem::path& gguf) {
  std::filesystem::path logits_path = gguf;
  logits_path.replace_extension(".logits.json");
  std::ifstream in{logits_path};
  std::vector<std::vector<int32_t>> out;
  if (!in) return out;
  // The document must outlive the loop: `parse(in).at("cases")` in the range would be a
  // reference into a destroyed temporary.
  const nlohmann::json doc = nlohmann::json::parse(in);
  for (const auto& c : doc.at("cases")) out.push_back(c.at("ids").get<std::vector<int32_t>>());
  return out;
}

double stddev(std::span<const float> v) {
  double mean = 0, sq = 0;
  for (float x : v) mean += x;
  mean /= double(v.size());
  for (float x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / double(v.size()));
}

// Both backends dequantize weights exactly (types the kernels do not read are rounded to F16 on
// upload) and keep F32 activations and F16 KV, so the F16 row of ../shared/data/README.md's
// tolerance table applies to every file: max |difference| <= 0.01 x std of the logits, top-1
// identical except where the reference's top two are closer than that.
constexpr double kMaxDiffInStd = 0.01;

// With GHOSTLINE_CUDA_MATVEC=int8, the products of the quantized matrices read the activations
// quantized to int8 (as the CPU backend's decode kernels and llama.cpp do); with
// GHOSTLINE_CUDA_GEMM=f16, the long batches' products of every matrix but F32 and BF16 ones read
// them rounded to fp16 (as llama.cpp's cuBLAS path does). A model with such a matrix is held to
// the quantized row of the table: 0.15 x std, and its greedy output may part from the
// reference's at a near tie.
bool reads_rounded_activations(const Model& model) {
  const char* matvec = std::getenv("GHOSTLINE_CUDA_MATVEC");
  const char* gemm = std::getenv("GHOSTLINE_CUDA_GEMM");
  const bool int8 = matvec != nullptr && std::string_view(matvec) == "int8";
  const bool f16 = gemm != nullptr && std::string_view(gemm) == "f16";
  const auto rounded = [&](const GgufTensor* t) {
    if (t == nullptr) return false;
    return (int8 && cuda_math::q8_activation_block(t->type) > 0) ||
           (f16 && t->type != GgmlType::F32 && t->type != GgmlType::BF16);
  };
  const ModelWeights& w = model.weights();
  if (rounded(w.output)) return true;
  for (const LayerWeights& l : w.layers)
    for (const GgufTensor* t : {l.wq, l.wk, l.wv, l.wo, l.w_gate, l.w_up, l.w_down})
      if (rounded(t)) return true;
  return false;
}
constexpr double kMaxDiffInStdRounded = 0.15;

double max_diff_in_std(const Model& model) {
  return reads_rounded_activations(model) ? kMaxDiffInStdRounded : kMaxDiffInStd;
}

void expect_close_logits(std::span<const float> ours, std::span<const float> ref,
                         const std::string& where, double diff_in_std = kMaxDiffInStd) {
  const double tol = diff_in_std * stddev(ref);
  double max_diff = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    max_diff = std::max(max_diff, double(std::abs(ours[i] - ref[i])));
  EXPECT_LE(max_diff, tol) << where;
  const auto top = [](std::span<const float> v) {
    return std::max_element(v.begin(), v.end()) - v.begin();
  };
  const auto ours_top = top(ours), ref_top = top(ref);
  if (ours_top != ref_top) {
    EXPECT_LE(std::abs(ref[size_t(ref_top)] - ref[size_t(ours_top)]), tol)
        << where << ": top-1 " << ours_top << " vs " << ref_top << " is no near-tie";
  }
}

// n token ids spread over a vocabulary (away from its first and last few), different for each
// salt.
std::vector<int32_t> spread_ids(int n, int vocab, int salt) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = int32_t((i * 7919 + salt) % (vocab - 10) + 5);
  return v;
}

// What the GPU comparison reads, checked where there is no GPU too.
TEST(CudaReferenceDataTest, EverySharedModelTheBackendServesHasPrompts) {
  const auto models = cuda_models();
  ASSERT_FALSE(models.empty()) << "no llama/qwen2 model in " << kModels;
  for (const auto& path : models) EXPECT_FALSE(prompts_of(path).empty()) << path;
}

// Each kernel alone, so that where a model's output is wrong the failure names the kernel.
TEST(CudaKernelTest, EachKernelAloneMatchesTheHostArithmetic) {
  SKIP_WITHOUT_GPU();
  const KernelCheck check = cuda_kernel_check();
  EXPECT_GT(check.cases, 100);
  for (const std::string& failure : check.failures) ADD_FAILURE() << failure;
}

TEST(CudaBackendTest, LogitsAndGreedyOutputMatchTheReferenceOnEverySharedModel) {
  SKIP_WITHOUT_GPU();
  const auto models = cuda_models();
  ASSERT_FALSE(models.empty()) << "no llama/qwen2 model in " << kModels;
  for (const auto& path : models) {
    SCOPED_TRACE(path.filename().string());
    // Chunks of 12: prefill runs through the GEMM path, batches start inside KV blocks, and the
    // last chunk of most prompts goes through the mat-vec kernel.
    Engine cuda(path, BackendKind::Cuda, 12), ref(path, BackendKind::Reference, 12);
    ASSERT_EQ(cuda.gen->backend_name(), "cuda");
    const bool rounded = reads_rounded_activations(*cuda.model);
    const double diff_in_std = rounded ? kMaxDiffInStdRounded : kMaxDiffInStd;
    const auto prompts = prompts_of(path);
    ASSERT_FALSE(prompts.empty());
    for (size_t p = 0; p < std::min<size_t>(prompts.size(), 2); ++p) {
      const auto& ids = prompts[p];
      const int n = int(ids.size());
      KvSequence a, b;
      ASSERT_TRUE(cuda.gen->forward(a, ids, LogitsRequest::last_n_of(n)));
      ASSERT_TRUE(ref.gen->forward(b, ids, LogitsRequest::last_n_of(n)));
      for (int i = 0; i < n; ++i)
        expect_close_logits(cuda.gen->logits(i), ref.gen->logits(i),
                            "prompt " + std::to_string(p) + " position " + std::to_string(i),
                            diff_in_std);
      cuda.pool->release(a);
      ref.pool->release(b);

      KvSequence ga, gb;
      const auto ours = cuda.gen->generate(ga, ids, {.max_tokens = 16});
      const auto theirs = ref.gen->generate(gb, ids, {.max_tokens = 16});
      if (!rounded) {
        EXPECT_EQ(ours.tokens, theirs.tokens) << "greedy, prompt " << p;
      }
      cuda.pool->release(ga);
      ref.pool->release(gb);
    }
  }
}

// The prefix cache hands a sequence's prefix to another (KvBlockPool::share); the first write
// into a shared partial block copies it (copy-on-extend), on the device through the copy
// function the backend gave the pool, which then has no host arena. Both sequences then go on,
// and each must see its own KV: the reference does the same.
TEST(CudaBackendTest, SharedPrefixExtendedInsideABlockMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const auto models = cuda_models();
  ASSERT_FALSE(models.empty()) << "no llama/qwen2 model in " << kModels;
  for (const auto& path : {models.front(), models.back()}) {
    SCOPED_TRACE(path.filename().string());
    Engine cuda(path, BackendKind::Cuda, 64), ref(path, BackendKind::Reference, 64);
    EXPECT_FALSE(cuda.pool->on_host());
    EXPECT_TRUE(ref.pool->on_host());
    const int vocab = cuda.model->config().n_vocab;
    const auto prefix = spread_ids(21, vocab, 13), tail_a = spread_ids(3, vocab, 101),
               tail_b = spread_ids(4, vocab, 211);  // 21: mid-block
    std::vector<std::vector<float>> got[2];
    Engine* engines[2] = {&cuda, &ref};
    for (int e = 0; e < 2; ++e) {
      Engine& en = *engines[e];
      KvSequence a;
      ASSERT_TRUE(en.gen->forward(a, prefix, LogitsRequest::none()));
      KvSequence b = en.pool->share(a, int(prefix.size()));
      ASSERT_TRUE(en.gen->forward(b, tail_b, LogitsRequest::last_n_of(int(tail_b.size()))));
      for (int i = 0; i < int(tail_b.size()); ++i)
        got[e].emplace_back(en.gen->logits(i).begin(), en.gen->logits(i).end());
      ASSERT_TRUE(en.gen->forward(a, tail_a, LogitsRequest::last_n_of(int(tail_a.size()))));
      for (int i = 0; i < int(tail_a.size()); ++i)
        got[e].emplace_back(en.gen->logits(i).begin(), en.gen->logits(i).end());
      en.pool->release(a);
      en.pool->release(b);
    }
    const double diff_in_std = max_diff_in_std(*cuda.model);
    for (size_t i = 0; i < got[1].size(); ++i)
      expect_close_logits(got[0][i], got[1][i], "row " + std::to_string(i), diff_in_std);
  }
}

// Greedy decoding asks for token ids only: the device searches its logits and hands over the
// ids. They must be the host's argmax of the logits the same forward hands over, for a step
// graph of each batch size and for a prefill batch (the GEMM path, no graph).
TEST(CudaBackendTest, GreedyTokensFromTheDeviceAreTheArgmaxOfItsLogits) {
  SKIP_WITHOUT_GPU();
  for (const auto& path : cuda_models()) {
    SCOPED_TRACE(path.filename().string());
    Engine e(path, BackendKind::Cuda, 64);
    const auto ids = spread_ids(40, e.model->config().n_vocab, 17);
    for (const int n : {1, 2, 3, 5, 8, 19}) {
      SCOPED_TRACE(testing::Message() << n << " tokens");
      const auto head = std::span(ids).first(ids.size() - size_t(n));
      const auto tail = std::span(ids).last(size_t(n));
      KvSequence a, b;
      ASSERT_TRUE(e.gen->forward(a, head, LogitsRequest::none()));
      ASSERT_TRUE(e.gen->forward(b, head, LogitsRequest::none()));
      ASSERT_TRUE(e.gen->forward(a, tail, LogitsRequest::last_n_of(n)));
      std::vector<int32_t> expected;
      for (int i = 0; i < n; ++i) expected.push_back(argmax(e.gen->logits(i)));
      ASSERT_TRUE(e.gen->forward(b, tail, LogitsRequest::greedy_last_n_of(n)));
      for (int i = 0; i < n; ++i) EXPECT_EQ(e.gen->greedy_token(i), expected[size_t(i)]) << i;
      e.pool->release(a);
      e.pool->release(b);
    }
  }
}

// Speculative verification relies on it: a batch of up to verify_cost().max_tokens tokens gives
// each token the logits of a single step, bit for bit.
TEST(CudaBackendTest, SmallBatchesGiveBitIdenticalLogits) {
  SKIP_WITHOUT_GPU();
  for (const auto& path : cuda_models()) {
    SCOPED_TRACE(path.filename().string());
    Engine e(path, BackendKind::Cuda, 64);
    const int n = e.gen->verify_cost().max_tokens;
    ASSERT_GT(n, 1);
    const auto ids = spread_ids(21 + n, e.model->config().n_vocab, 13);
    const auto head = std::span(ids).first(ids.size() - size_t(n));
    const auto tail = std::span(ids).last(size_t(n));
    KvSequence batched, stepped;
    ASSERT_TRUE(e.gen->forward(batched, head, LogitsRequest::none()));
    ASSERT_TRUE(e.gen->forward(stepped, head, LogitsRequest::none()));
    ASSERT_TRUE(e.gen->forward(batched, tail, LogitsRequest::last_n_of(n)));
    std::vector<std::vector<float>> all;
    for (int i = 0; i < n; ++i) all.emplace_back(e.gen->logits(i).begin(), e.gen->logits(i).end());
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(e.gen->forward(stepped, tail.subspan(size_t(i), 1)));
      const auto one = e.gen->logits(0);
      EXPECT_EQ(std::memcmp(one.data(), all[size_t(i)].data(), one.size_bytes()), 0)
          << "position " << i;
    }
    e.pool->release(batched);
    e.pool->release(stepped);
  }
}

TEST(CudaBackendTest, SpeculativeOutputIsIdenticalToPlainDecoding) {
  SKIP_WITHOUT_GPU();
  const std::filesystem::path target_path = "models/ghostline-code.gguf",
                              draft_path = "models/ghostline-code-draft.gguf";
  ASSERT_TRUE(std::filesystem::exists(target_path) && std::filesystem::exists(draft_path));
  Engine target(target_path, BackendKind::Cuda, 32), draft(draft_path, BackendKind::Cuda, 32);
  AdaptiveK always_draft(1, 7, 4, 0.0), k_ngram = AdaptiveK::for_ngram(target.gen->verify_cost());
  int proposed = 0;
  for (int p = 0; p < 6; ++p) {
    const auto prompt = spread_ids(40 + 7 * p, target.model->config().n_vocab, 131 * p);
    KvSequence plain_seq, seq, draft_seq;
    const auto plain = target.gen->generate(plain_seq, prompt, {.max_tokens = 32});
    const Speculation spec{.draft = p % 2 ? nullptr : draft.gen.get(),
                           .draft_seq = &draft_seq,
                           .ngram = true,
                           .k_draft = &always_draft,
                           .k_ngram = &k_ngram};
    const auto r = generate_speculative(*target.gen, seq, prompt, {.max_tokens = 32}, spec);
    EXPECT_EQ(r.tokens, plain.tokens) << "prompt " << p;
    EXPECT_EQ(seq.n_tokens, plain_seq.n_tokens) << "prompt " << p;
    proposed += r.speculation.proposed_draft + r.speculation.proposed_ngram;
    target.pool->release(plain_seq);
    target.pool->release(seq);
    draft.pool->release(draft_seq);
  }
  EXPECT_GT(proposed, 0) << "nothing was speculated";
}

TEST(CudaBackendTest, CancelBetweenLayersWritesNoLogits) {
  SKIP_WITHOUT_GPU();
  auto model = Model::load("models/ghostline-code.gguf", {.lock_resident = false});
  const ModelConfig& c = model->config();
  KvBlockPool pool(c.n_layer, c.kv_dim(), 4 << 20);
  auto backend = make_backend(*model, pool, {.kind = BackendKind::Cuda});
  KvSequence seq;
  const std::vector<int32_t> ids = {5, 6, 7, 8};
  pool.prepare_append(seq, int(ids.size()));
  std::atomic<bool> cancel{true};
  std::vector<float> logits(size_t(c.n_vocab), -1.0f);
  EXPECT_FALSE(backend->forward(
      {.tokens = ids, .start_pos = 0, .blocks = seq.blocks, .n_logits = 1, .cancel = &cancel},
      logits));
  EXPECT_TRUE(std::all_of(logits.begin(), logits.end(), [](float v) { return v == -1.0f; }));
  cancel = false;
  EXPECT_TRUE(backend->forward(
      {.tokens = ids, .start_pos = 0, .blocks = seq.blocks, .n_logits = 1, .cancel = &cancel},
      logits));
  EXPECT_TRUE(std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); }));
  pool.release(seq);
}

// Runs everywhere: which backend `auto` and `cuda` give on this machine.
TEST(CudaBackendSelectionTest, AutoUsesTheGpuWhenPresentElseTheCpu) {
  auto model = Model::load("models/ghostline-code-draft.gguf", {.lock_resident = false});
  const ModelConfig& c = model->config();
  KvBlockPool pool(c.n_layer, c.kv_dim(), 4 << 20);
  const CudaStatus status = cuda_status();
  EXPECT_FALSE(status.description.empty());
  auto backend = make_backend(*model, pool, {.kind = BackendKind::Auto});
  EXPECT_EQ(backend->name(), status.available ? "cuda" : "cpu");
  if (!status.available) {
    EXPECT_THROW(make_backend(*model, pool, {.kind = BackendKind::Cuda}), BackendUnavailable);
  }
}

}  // namespace
}  // namespace ghostline::engine
