// Speculative decoding: greedy output identical to the plain loop (shipped target/draft pair on
// the fast path, a shared reference model on the reference path), rejection sampling that keeps
// the target's distribution, n-gram lookup, adaptive k, cancellation counted in forward calls,
// and a draft KV that never holds rejected tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

#include "engine/backend/cpu/matmul.h"
#include "engine/generator.h"
#include "engine/model/random_model.h"
#include "engine/speculative.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {
namespace {

const char* kTarget = "models/ghostline-code.gguf";
const char* kDraft = "models/ghostline-code-draft.gguf";
const char* kRefF16 = "../shared/data/models/ref-llama-spm-f16.gguf";
const char* kRefQ4K = "../shared/data/models/ref-llama-spm-q4_k_m.gguf";

// Source files of this repository in the languages the shipped models were trained on.
const char* kCodeFiles[] = {
    "tools/train/train.py",       "tools/train/model.py",         "tools/train/tokenizer.py",
    "tools/train/gguf_writer.py", "engine/kv/kv_block_pool.cpp",  "engine/tokenizer/bpe.cpp",
    "lsp/scheduler.cpp",          "tools/bench/matmul_bench.cpp", "engine/generator.cpp",
    "tools/replay/synthesize.py",
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Windows of real code: for each file, `per_file` prefixes ending at evenly spread points,
// each at most `max_len` tokens long.
std::vector<std::vector<int32_t>> code_prompts(const Tokenizer& tok, int per_file, int max_len) {
  std::vector<std::vector<int32_t>> prompts;
  for (const char* file : kCodeFiles) {
    if (!std::filesystem::exists(file)) continue;
    const auto ids = tok.encode(read_file(file));
    if (ids.size() < 64) continue;
    for (int w = 1; w <= per_file; ++w) {
      const size_t end = ids.size() * size_t(w) / size_t(per_file + 1);
      const size_t begin = end > size_t(max_len) ? end - size_t(max_len) : 0;
      if (end - begin >= 16)
        prompts.emplace_back(ids.begin() + long(begin), ids.begin() + long(end));
    }
  }
  return prompts;
}

struct Engine {
  std::unique_ptr<Model> model;
  std::unique_ptr<KvBlockPool> pool;
  std::unique_ptr<Generator> gen;

  // share: the engine whose compute threads this one runs on (a draft beside its target).
  Engine(const char* path, BackendKind path_kind, int chunk = 32, int threads = 2,
         const Engine* share = nullptr) {
    model = Model::load(path, {.lock_resident = false});
    const ModelConfig& c = model->config();
    pool = std::make_unique<KvBlockPool>(c.n_layer, c.kv_dim(), 16 << 20);
    gen = std::make_unique<Generator>(
        *model, *pool,
        GeneratorOptions{.threads = threads,
                         .backend = path_kind,
                         .chunk_tokens = chunk,
                         .share_threads_with = share ? share->gen.get() : nullptr});
  }
};

enum class Mode { Draft, Ngram, Both };
const char* mode_name(Mode m) {
  return m == Mode::Draft ? "draft" : m == Mode::Ngram ? "ngram" : "both";
}

// Runs plain and speculative generation and checks that they agree token for token, in the
// stop reason and in the KV left in the target sequence.
class IdentityChecker {
 public:
  IdentityChecker(Engine& target, Engine& draft) : target_(target), draft_(draft) {}

  // costs: measured costs to decide with (null: AdaptiveK's fixed costs); warm_draft: the draft
  // KV already holds the prompt but its last token, as the draft's prefix cache gives it.
  SpeculationStats check(std::span<const int32_t> prompt, const GenerateOptions& options, Mode mode,
                         AdaptiveK& k_draft, AdaptiveK& k_ngram, const std::string& label,
                         SpeculationCosts* costs = nullptr, bool warm_draft = false) {
    // Each run gets its own copy of the options: a stop rule's state starts afresh.
    KvSequence plain_seq;
    const auto plain = target_.gen->generate(plain_seq, prompt, GenerateOptions(options));
    KvSequence seq, draft_seq;
    if (warm_draft && mode != Mode::Ngram)
      draft_.gen->forward(draft_seq, prompt.first(prompt.size() - 1), LogitsRequest::none());
    const Speculation spec{.draft = mode == Mode::Ngram ? nullptr : draft_.gen.get(),
                           .draft_seq = &draft_seq,
                           .ngram = mode != Mode::Draft,
                           .k_draft = &k_draft,
                           .k_ngram = &k_ngram,
                           .costs = costs};
    const auto r = generate_speculative(*target_.gen, seq, prompt, GenerateOptions(options), spec);
    EXPECT_EQ(r.tokens, plain.tokens) << label << " " << mode_name(mode);
    EXPECT_EQ(r.reason, plain.reason) << label << " " << mode_name(mode);
    EXPECT_EQ(seq.n_tokens, plain_seq.n_tokens) << label << " " << mode_name(mode);
    EXPECT_LE(draft_seq.n_tokens, int(prompt.size() + r.tokens.size()));
    target_.pool->release(plain_seq);
    target_.pool->release(seq);
    draft_.pool->release(draft_seq);
    last_reason = plain.reason;
    return r.speculation;
  }

  StopReason last_reason = StopReason::MaxTokens;

 private:
  Engine& target_;
  Engine& draft_;
};

class ShippedPairTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    target_ = std::make_unique<Engine>(kTarget, BackendKind::Cpu);
    // On the target's threads, as the daemon runs it.
    draft_ = std::make_unique<Engine>(kDraft, BackendKind::Cpu, 32, 2, target_.get());
  }
  static void TearDownTestSuite() {
    target_.reset();
    draft_.reset();
  }
  static std::unique_ptr<Engine> target_, draft_;
};
std::unique_ptr<Engine> ShippedPairTest::target_, ShippedPairTest::draft_;

// `count` token ids spread over a vocabulary of n_vocab, away from its first and last ids.
std::vector<int32_t> spread_ids(size_t count, int n_vocab) {
  std::vector<int32_t> ids(count);
  for (size_t i = 0; i < count; ++i) ids[i] = int32_t((i * 7919 + 13) % size_t(n_vocab - 10) + 5);
  return ids;
}

// The logits of each of `tail`'s tokens, verified as one batch after `head` in a fresh sequence.
std::vector<std::vector<float>> batch_logits(Engine& e, std::span<const int32_t> head,
                                             std::span<const int32_t> tail) {
  std::vector<std::vector<float>> all;
  KvSequence seq;
  const int n = int(tail.size());
  if (e.gen->forward(seq, head, LogitsRequest::none()) &&
      e.gen->forward(seq, tail, LogitsRequest::last_n_of(n)))
    for (int i = 0; i < n; ++i) all.emplace_back(e.gen->logits(i).begin(), e.gen->logits(i).end());
  e.pool->release(seq);
  return all;
}

// Greedy speculation is exact only if verifying a batch of tokens gives the logits of running
// them one by one: checked bit for bit on every weight type the test models use.
TEST(SpeculativeBatchTest, SmallBatchesGiveBitIdenticalLogitsOnTheFastPath) {
  // An FFN width that is no multiple of the vector width (vector tails inside a batch).
  const auto odd_ffn = std::filesystem::temp_directory_path() /
                       ("ghostline-spec-odd-ffn-" + std::to_string(::getpid()) + ".gguf");
  write_random_model(odd_ffn, {.arch = "llama",
                               .n_vocab = 600,
                               .n_embd = 64,
                               .n_layer = 2,
                               .n_head = 2,
                               .n_head_kv = 1,
                               .n_ff = 40,
                               .n_ctx = 128,
                               .type = GgmlType::F16});
  const std::vector<std::string> paths = {kTarget,
                                          kDraft,
                                          kRefF16,
                                          kRefQ4K,
                                          "../shared/data/models/ref-qwen2-dscoder-q8_0.gguf",
                                          "../shared/data/models/ref-qwen2-dscoder-q4_0.gguf",
                                          "../shared/data/models/ref-qwen2-dscoder-q6_k.gguf",
                                          "../shared/data/models/ref-starcoder2-q8_0.gguf",
                                          "../shared/data/models/ref-gemma-q8_0.gguf",
                                          odd_ffn.string()};
  // The GELU MLP and GeGLU with the same odd width: their activations have vector tails too.
  std::vector<std::filesystem::path> odd_arch_files;
  for (const char* arch : {"starcoder2", "gemma"}) {
    odd_arch_files.push_back(std::filesystem::temp_directory_path() /
                             ("ghostline-spec-odd-" + std::string(arch) + "-" +
                              std::to_string(::getpid()) + ".gguf"));
    write_random_model(odd_arch_files.back(), {.arch = arch,
                                               .n_vocab = 600,
                                               .n_embd = 64,
                                               .n_layer = 2,
                                               .n_head = 2,
                                               .n_head_kv = 1,
                                               .n_ff = 40,
                                               .n_ctx = 128,
                                               .type = GgmlType::F16});
  }
  std::vector<std::string> all_paths = paths;
  for (const auto& f : odd_arch_files) all_paths.push_back(f.string());
  for (const std::string& path : all_paths) {
    Engine e(path.c_str(), BackendKind::Cpu);
    const auto ids = spread_ids(27, e.model->config().n_vocab);
    const int n = int(cpu::kMatmulDecodeMaxTokens);
    const auto head = std::span(ids).first(ids.size() - size_t(n));
    const auto tail = std::span(ids).last(size_t(n));
    const auto all = batch_logits(e, head, tail);
    ASSERT_EQ(all.size(), size_t(n)) << path;
    KvSequence stepped;
    ASSERT_TRUE(e.gen->forward(stepped, head, LogitsRequest::none()));
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(e.gen->forward(stepped, tail.subspan(size_t(i), 1)));
      const auto one = e.gen->logits(0);
      EXPECT_EQ(std::memcmp(one.data(), all[size_t(i)].data(), one.size_bytes()), 0)
          << path << " position " << i;
    }
    e.pool->release(stepped);
  }
  std::filesystem::remove(odd_ffn);
  for (const auto& f : odd_arch_files) std::filesystem::remove(f);
}

// Decode steps and verification batches attend to the context in fixed parts that are
// combined afterwards: across several parts, a batch still equals its single steps bit for bit
// whatever the threads, and the combined attention is the reference's softmax attention.
TEST(SpeculativeBatchTest, BatchesEqualStepsWhereAttentionSplitsTheContext) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ghostline-spec-long-" + std::to_string(::getpid()) + ".gguf");
  write_random_model(path, {.arch = "llama",
                            .n_vocab = 600,
                            .n_embd = 64,
                            .n_layer = 2,
                            .n_head = 4,
                            .n_head_kv = 2,
                            .n_ff = 96,
                            .n_ctx = 2048,
                            .type = GgmlType::F16});
  Engine e(path.c_str(), BackendKind::Cpu);
  Engine ref(path.c_str(), BackendKind::Reference);
  const int n = int(cpu::kMatmulDecodeMaxTokens);
  // 16 tokens from position 1785 cross a part boundary (parts are a multiple of 64 keys) and,
  // with 2 threads, the length from which a task takes every KV head of its part.
  const auto ids = spread_ids(1801, 600);
  const auto head = std::span(ids).first(ids.size() - size_t(n));
  const auto tail = std::span(ids).last(size_t(n));
  const auto all = batch_logits(e, head, tail);
  ASSERT_EQ(all.size(), size_t(n));
  KvSequence stepped, reference;
  ASSERT_TRUE(e.gen->forward(stepped, head, LogitsRequest::none()));
  ASSERT_TRUE(ref.gen->forward(reference, head, LogitsRequest::none()));
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(e.gen->forward(stepped, tail.subspan(size_t(i), 1)));
    ASSERT_TRUE(ref.gen->forward(reference, tail.subspan(size_t(i), 1)));
    const auto one = e.gen->logits(0);
    EXPECT_EQ(std::memcmp(one.data(), all[size_t(i)].data(), one.size_bytes()), 0)
        << "position " << head.size() + size_t(i);
    const auto r = ref.gen->logits(0);
    double max_diff = 0, max_abs = 0;
    for (size_t j = 0; j < r.size(); ++j) {
      max_diff = std::max(max_diff, double(std::abs(one[j] - r[j])));
      max_abs = std::max(max_abs, double(std::abs(r[j])));
    }
    EXPECT_LE(max_diff, 1e-3 * max_abs) << "position " << head.size() + size_t(i);
  }
  // Nor does what a row gets depend on the threads, which change how the parts are shared.
  for (int threads : {1, 3}) {
    Engine other(path.c_str(), BackendKind::Cpu, 32, threads);
    const auto theirs = batch_logits(other, head, tail);
    ASSERT_EQ(theirs.size(), size_t(n));
    for (int i = 0; i < n; ++i)
      EXPECT_EQ(std::memcmp(theirs[size_t(i)].data(), all[size_t(i)].data(),
                            all[size_t(i)].size() * sizeof(float)),
                0)
          << threads << " threads, position " << head.size() + size_t(i);
  }
  e.pool->release(stepped);
  ref.pool->release(reference);
  std::filesystem::remove(path);
}

TEST_F(ShippedPairTest, GreedyOutputIsIdenticalToThePlainLoop) {
  const auto prompts = code_prompts(target_->model->tokenizer(), 4, 200);
  ASSERT_GE(prompts.size(), 30u);
  IdentityChecker checker(*target_, *draft_);
  // The draft-only run uses a zero cost so that the draft proposes every round.
  const VerifyCost cost = target_->gen->verify_cost();
  AdaptiveK always_draft(1, 7, 4, 0.0),
      k_draft = AdaptiveK::for_draft(cost, target_->gen->draft_cost()),
      k_ngram = AdaptiveK::for_ngram(cost), k_ngram_only = AdaptiveK::for_ngram(cost);
  SpeculationStats draft_stats, ngram_stats, both_stats;
  for (size_t i = 0; i < prompts.size(); ++i) {
    // Short runs too, so that max_tokens cuts proposals.
    const GenerateOptions options{.max_tokens = i % 4 == 3 ? 5 : 32};
    const std::string label = "prompt " + std::to_string(i);
    draft_stats +=
        checker.check(prompts[i], options, Mode::Draft, always_draft, k_ngram_only, label);
    ngram_stats += checker.check(prompts[i], options, Mode::Ngram, k_draft, k_ngram_only, label);
    both_stats += checker.check(prompts[i], options, Mode::Both, k_draft, k_ngram, label);
  }
  // Each mode really speculated.
  EXPECT_GT(draft_stats.proposed_draft, 100);
  EXPECT_GT(draft_stats.accepted_draft, 0);
  EXPECT_EQ(draft_stats.proposed_ngram, 0);
  EXPECT_GT(ngram_stats.proposed_ngram, 0);
  EXPECT_GT(ngram_stats.accepted_ngram, 0);
  EXPECT_EQ(ngram_stats.proposed_draft, 0);
  EXPECT_GT(both_stats.proposed_draft + both_stats.proposed_ngram, 0);
}

// The draft runs on the target's compute threads where it asks for as many; a generator that
// asks for another count has its own.
TEST_F(ShippedPairTest, TheDraftRunsOnTheTargetsThreads) {
  EXPECT_TRUE(draft_->gen->shares_threads_with(*target_->gen));
  EXPECT_TRUE(target_->gen->shares_threads_with(*draft_->gen));
  Engine alone(kDraft, BackendKind::Cpu);
  EXPECT_FALSE(alone.gen->shares_threads_with(*target_->gen));
  Engine other_count(kDraft, BackendKind::Cpu, 32, 3, target_.get());
  EXPECT_FALSE(other_count.gen->shares_threads_with(*target_->gen));
  Engine reference(kDraft, BackendKind::Reference, 32, 2, target_.get());
  EXPECT_FALSE(reference.gen->shares_threads_with(*target_->gen));
}

// A source that believes its proposals are always accepted.
AdaptiveK confident_draft(const VerifyCost& cost, const DraftCost& draft) {
  AdaptiveK k = AdaptiveK::for_draft(cost, draft);
  for (int i = 0; i < 60; ++i) k.record(k.k_max(), k.k_max());
  return k;
}

// The target as its own draft: its proposals are accepted (nearly all: the draft's KV holds the
// prompt as other forwards computed it, its own prefill of all but the last token and then a
// step where the target ran one prefill, so their logits may differ in the last bits and a near
// tie go the other way). Measured as costing three target steps a step, it is not used (but for
// a probe now and then); with the fixed costs alone, it proposes every round. The output is the
// same.
TEST_F(ShippedPairTest, ADraftMeasuredAsCostlyIsNotUsedThoughItAgrees) {
  const auto prompts = code_prompts(target_->model->tokenizer(), 1, 120);
  ASSERT_GE(prompts.size(), 4u);
  Engine self_draft(kTarget, BackendKind::Cpu);
  IdentityChecker checker(*target_, self_draft);
  const VerifyCost cost = target_->gen->verify_cost();
  const DraftCost draft = target_->gen->draft_cost();
  AdaptiveK unused = AdaptiveK::for_ngram(cost);
  // Measured before: a draft step of ten seconds. It stays measured so unless the draft runs.
  SpeculationCosts costs(cost, draft);
  costs.record_target(1, 1.0);
  for (int i = 0; i < 20; ++i) costs.record_draft(1, 10000.0);
  SpeculationStats priced, unpriced;
  for (size_t i = 0; i < 4; ++i) {
    const GenerateOptions options{.max_tokens = 48};
    AdaptiveK a = confident_draft(cost, draft), b = confident_draft(cost, draft);
    const std::string label = "prompt " + std::to_string(i);
    priced += checker.check(prompts[i], options, Mode::Draft, a, unused, label, &costs, true);
    unpriced += checker.check(prompts[i], options, Mode::Draft, b, unused, label, nullptr, true);
  }
  EXPECT_GE(unpriced.accepted_draft * 10, unpriced.proposed_draft * 9);
  EXPECT_GT(unpriced.proposed_draft, 60);
  // Only probes: at most one round in kProbeAfterSkips + 1.
  EXPECT_LT(priced.proposed_draft * 4, unpriced.proposed_draft);
  EXPECT_GT(priced.target_steps, unpriced.target_steps);
}

// A draft with random weights (the target's vocabulary) disagrees with the trained target: after
// a few rounds it stops proposing, so decoding costs about what the plain loop does.
TEST_F(ShippedPairTest, ADraftThatDisagreesFallsBackToPlainDecoding) {
  const auto random_draft = std::filesystem::temp_directory_path() /
                            ("ghostline-spec-random-draft-" + std::to_string(::getpid()) + ".gguf");
  write_random_model(random_draft, {.arch = "llama",
                                    .n_embd = 64,
                                    .n_layer = 2,
                                    .n_head = 2,
                                    .n_head_kv = 1,
                                    .n_ff = 128,
                                    .n_ctx = 4096,
                                    .type = GgmlType::F16,
                                    .vocab_from = kTarget});
  {
    Engine draft(random_draft.string().c_str(), BackendKind::Cpu);
    IdentityChecker checker(*target_, draft);
    const auto prompts = code_prompts(target_->model->tokenizer(), 1, 120);
    ASSERT_GE(prompts.size(), 4u);
    const VerifyCost cost = target_->gen->verify_cost();
    const DraftCost draft_cost = target_->gen->draft_cost();
    AdaptiveK k_draft = AdaptiveK::for_draft(cost, draft_cost), unused = AdaptiveK::for_ngram(cost);
    SpeculationCosts costs(cost, draft_cost);
    SpeculationStats stats;
    int emitted = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      KvSequence seq;
      const GenerateOptions options{.max_tokens = 48};
      stats += checker.check(prompts[i], options, Mode::Draft, k_draft, unused,
                             "prompt " + std::to_string(i), &costs, true);
      emitted += static_cast<int>(
          target_->gen->generate(seq, prompts[i], GenerateOptions(options)).tokens.size());
      target_->pool->release(seq);
    }
    ASSERT_GT(emitted, 100);
    // It was tried (a stale estimate is probed now and then), and mostly failed. (Random
    // weights still favour a few tokens, and where the target emits one of them a proposal is
    // accepted: which rounds are probes depends on the timings, so the share accepted varies.)
    EXPECT_GT(stats.proposed_draft, 0);
    EXPECT_LT(2 * stats.accepted_draft, stats.proposed_draft);
    EXPECT_LT(k_draft.acceptance(), 0.5);
    // Proposals and the draft's forwards stay a small share of the work.
    EXPECT_LT(stats.proposed_draft, emitted / 4);
    EXPECT_LT(stats.draft_steps, emitted / 4);
  }
  std::filesystem::remove(random_draft);
}

// Every measured cost is a ratio to a plain step, which is measured only in rounds that propose
// nothing. On text that repeats, n-gram proposals are accepted and pay every round: a plain
// step still comes first (nothing measured yet) and then at least every kStepRefreshForwards
// target forwards, so that a step measured long ago (or under another load) cannot make
// verification look free. (How many more rounds propose nothing depends on the timings the
// machine gives, so only the lower bound is asserted.)
TEST_F(ShippedPairTest, APlainStepRefreshesTheCostsWhileASourcePaysEveryRound) {
  std::string text;
  for (int i = 0; i < 24; ++i) text += "    total += 1\n";
  const std::vector<int32_t> prompt = target_->model->tokenizer().encode(text);
  IdentityChecker checker(*target_, *draft_);
  const VerifyCost cost = target_->gen->verify_cost();
  // At most 4 proposals a round, so that the generation takes several refresh periods however
  // cheap verification is measured.
  AdaptiveK k_ngram(1, 4, 4, cost.per_token), unused = AdaptiveK::for_draft(cost, {});
  SpeculationCosts costs(cost, target_->gen->draft_cost());
  const SpeculationStats stats = checker.check(prompt, GenerateOptions{.max_tokens = 400},
                                               Mode::Ngram, unused, k_ngram, "repeats", &costs);
  // The second round is priced with one step measured and the prior's slope: it proposes.
  ASSERT_GT(k_ngram.rounds(), 0);
  ASSERT_GE(stats.accepted_ngram * 10, stats.proposed_ngram * 9) << "the text should repeat";
  const int plain_steps = stats.target_steps - k_ngram.rounds();
  // The first round, then one after every kStepRefreshForwards other target forwards.
  ASSERT_GT(stats.target_steps, SpeculationCosts::kStepRefreshForwards + 1);
  EXPECT_GE(plain_steps,
            1 + (stats.target_steps - 1) / (SpeculationCosts::kStepRefreshForwards + 1));
}

TEST_F(ShippedPairTest, StopRulesMatchThePlainLoop) {
  const auto prompts = code_prompts(target_->model->tokenizer(), 1, 150);
  ASSERT_FALSE(prompts.empty());
  IdentityChecker checker(*target_, *draft_);
  AdaptiveK always_draft(1, 7, 4, 0.0), k_ngram = AdaptiveK::for_ngram(target_->gen->verify_cost());
  for (size_t i = 0; i < prompts.size(); ++i) {
    KvSequence seq;
    const auto full = target_->gen->generate(seq, prompts[i], {.max_tokens = 24});
    target_->pool->release(seq);
    const std::string label = "prompt " + std::to_string(i);
    if (full.tokens.size() >= 3) {
      // A stop token met in the middle of the output (possibly inside an accepted proposal).
      const GenerateOptions stop{.max_tokens = 24, .stop_tokens = {full.tokens[2]}};
      for (Mode m : {Mode::Draft, Mode::Ngram, Mode::Both})
        checker.check(prompts[i], stop, m, always_draft, k_ngram, label + " stop token");
    }
    const GenerateOptions rule{.max_tokens = 24,
                               .should_stop = [n = 0](int32_t) mutable { return ++n == 6; }};
    for (Mode m : {Mode::Draft, Mode::Ngram, Mode::Both})
      checker.check(prompts[i], rule, m, always_draft, k_ngram, label + " stop rule");
    for (int max_tokens : {0, 1, 2}) {
      const GenerateOptions few{.max_tokens = max_tokens};
      for (Mode m : {Mode::Draft, Mode::Both})
        checker.check(prompts[i], few, m, always_draft, k_ngram, label + " few");
    }
  }
}

TEST_F(ShippedPairTest, ContextFullMatchesThePlainLoop) {
  // Prompts that leave fewer free positions than max_tokens: k is cut by the context.
  const int n_ctx = target_->model->n_ctx();
  IdentityChecker checker(*target_, *draft_);
  AdaptiveK always_draft(1, 7, 4, 0.0), k_ngram(1, 7, 4, 0.0);
  for (int free : {1, 3, 9}) {
    const auto prompts = code_prompts(target_->model->tokenizer(), 1, n_ctx - free);
    int checked = 0;
    for (const auto& prompt : prompts) {
      if (int(prompt.size()) != n_ctx - free) continue;
      for (Mode m : {Mode::Draft, Mode::Ngram, Mode::Both}) {
        checker.check(prompt, {.max_tokens = 32}, m, always_draft, k_ngram,
                      "free " + std::to_string(free));
        EXPECT_EQ(checker.last_reason, StopReason::ContextFull);
      }
      if (++checked == 2) break;
    }
    EXPECT_GT(checked, 0);
  }
}

TEST_F(ShippedPairTest, OnTokenSeesEveryEmittedTokenInOrder) {
  const auto prompts = code_prompts(target_->model->tokenizer(), 1, 120);
  ASSERT_FALSE(prompts.empty());
  std::vector<int32_t> streamed;
  KvSequence seq, draft_seq;
  AdaptiveK always_draft(1, 7, 4, 0.0);
  const auto r = generate_speculative(
      *target_->gen, seq, prompts[0],
      {.max_tokens = 20, .on_token = [&](int32_t t) { streamed.push_back(t); }},
      {.draft = draft_->gen.get(), .draft_seq = &draft_seq, .k_draft = &always_draft});
  EXPECT_EQ(streamed, r.tokens);
  target_->pool->release(seq);
  draft_->pool->release(draft_seq);
}

TEST_F(ShippedPairTest, CancelBeforeTheCallRunsNoForward) {
  const auto prompts = code_prompts(target_->model->tokenizer(), 1, 100);
  std::atomic<bool> cancel{true};
  const int64_t t0 = target_->gen->forward_calls(), d0 = draft_->gen->forward_calls();
  KvSequence seq, draft_seq;
  const auto r =
      generate_speculative(*target_->gen, seq, prompts[0], {.max_tokens = 16, .cancel = &cancel},
                           {.draft = draft_->gen.get(), .draft_seq = &draft_seq});
  EXPECT_EQ(r.reason, StopReason::Cancelled);
  EXPECT_TRUE(r.tokens.empty());
  EXPECT_EQ(target_->gen->forward_calls(), t0);
  EXPECT_EQ(draft_->gen->forward_calls(), d0);
  EXPECT_EQ(seq.n_tokens, 0);
  target_->pool->release(seq);
  draft_->pool->release(draft_seq);
}

TEST_F(ShippedPairTest, CancelFromOnTokenStopsWithinOneForward) {
  const auto prompts = code_prompts(target_->model->tokenizer(), 2, 120);
  for (Mode mode : {Mode::Draft, Mode::Ngram, Mode::Both}) {
    for (int m : {1, 3, 7}) {
      for (size_t p = 0; p < prompts.size(); p += 3) {
        std::atomic<bool> cancel{false};
        int streamed = 0;
        int64_t calls_at_cancel = 0;
        auto calls = [&] { return target_->gen->forward_calls() + draft_->gen->forward_calls(); };
        KvSequence seq, draft_seq;
        AdaptiveK always_draft(1, 7, 4, 0.0);
        const auto r =
            generate_speculative(*target_->gen, seq, prompts[p],
                                 {.max_tokens = 32,
                                  .cancel = &cancel,
                                  .on_token =
                                      [&](int32_t) {
                                        if (++streamed == m) {
                                          cancel = true;
                                          calls_at_cancel = calls();
                                        }
                                      }},
                                 {.draft = mode == Mode::Ngram ? nullptr : draft_->gen.get(),
                                  .draft_seq = &draft_seq,
                                  .ngram = mode != Mode::Draft,
                                  .k_draft = &always_draft});
        const std::string label = std::string(mode_name(mode)) + " m=" + std::to_string(m);
        if (streamed < m) {  // ended before the m-th token (stop token): nothing to check
          target_->pool->release(seq);
          draft_->pool->release(draft_seq);
          continue;
        }
        EXPECT_EQ(r.reason, StopReason::Cancelled) << label;
        EXPECT_EQ(int(r.tokens.size()), m) << label;
        EXPECT_LE(calls() - calls_at_cancel, 1) << label;
        EXPECT_LE(r.speculation.steps_after_cancel, 1) << label;
        // The contract of the plain loop: the prompt and all but the last token.
        EXPECT_EQ(seq.n_tokens, int(prompts[p].size()) + m - 1) << label;
        EXPECT_LE(draft_seq.n_tokens, int(prompts[p].size()) + m) << label;
        target_->pool->release(seq);
        draft_->pool->release(draft_seq);
      }
    }
  }
}

// After a run the draft KV holds no rejected token: continuing from it gives the logits of
// running the same tokens from scratch.
TEST_F(ShippedPairTest, DraftKvHoldsOnlyAcceptedTokens) {
  const auto prompts = code_prompts(target_->model->tokenizer(), 2, 150);
  AdaptiveK always_draft(1, 7, 4, 0.0);
  int checked = 0;
  for (size_t p = 0; p < prompts.size(); p += 2) {
    KvSequence seq, draft_seq;
    const auto r = generate_speculative(*target_->gen, seq, prompts[p], {.max_tokens = 24},
                                        {.draft = draft_->gen.get(),
                                         .draft_seq = &draft_seq,
                                         .ngram = false,
                                         .k_draft = &always_draft});
    std::vector<int32_t> all(prompts[p]);
    all.insert(all.end(), r.tokens.begin(), r.tokens.end());
    ASSERT_LE(draft_seq.n_tokens, int(all.size()));
    const int n = draft_seq.n_tokens;
    if (n == 0 || n >= int(all.size())) {
      target_->pool->release(seq);
      draft_->pool->release(draft_seq);
      continue;
    }
    ++checked;
    // The next context token, run on the kept KV and on a fresh computation of the prefix.
    ASSERT_TRUE(draft_->gen->forward(draft_seq, std::span(all).subspan(size_t(n), 1)));
    const std::vector<float> continued(draft_->gen->logits(0).begin(),
                                       draft_->gen->logits(0).end());
    KvSequence fresh;
    ASSERT_TRUE(draft_->gen->forward(fresh, std::span(all).first(size_t(n) + 1)));
    const std::vector<float> expected(draft_->gen->logits(0).begin(), draft_->gen->logits(0).end());
    // The draft computed the prompt as a batch and the accepted tokens in steps or small
    // batches: the same prefix as the prompt batch followed by steps is a second reference.
    KvSequence stepped;
    ASSERT_TRUE(draft_->gen->forward(stepped, std::span(prompts[p])));
    for (size_t i = prompts[p].size(); i <= size_t(n); ++i)
      ASSERT_TRUE(draft_->gen->forward(stepped, std::span(all).subspan(i, 1)));
    const std::vector<float> stepped_logits(draft_->gen->logits(0).begin(),
                                            draft_->gen->logits(0).end());
    // Kernel noise without speculation: the same n tokens as one batch, then the next token as a
    // step. Batches and steps round activations differently (floats or 8 bits, by block), so
    // this differs from `expected` by more than float rounding.
    KvSequence control;
    ASSERT_TRUE(draft_->gen->forward(control, std::span(all).first(size_t(n))));
    ASSERT_TRUE(draft_->gen->forward(control, std::span(all).subspan(size_t(n), 1)));
    const auto control_logits = draft_->gen->logits(0);
    double diff_batch = 0, diff_stepped = 0, noise = 0, sq = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      diff_batch = std::max(diff_batch, std::abs(double(continued[i]) - expected[i]));
      diff_stepped = std::max(diff_stepped, std::abs(double(continued[i]) - stepped_logits[i]));
      noise = std::max(noise, std::abs(double(control_logits[i]) - expected[i]));
      sq += double(expected[i]) * expected[i];
    }
    // A rejected token left in the KV shifts every later position: the logits move by about
    // their own size, far from both references. Where both paths quantize activations the
    // noise above can be 0 while a value rounded the other way in one path moves the logits
    // by a few percent of their size; the closer reference is the one computed like the draft.
    const double rms = std::sqrt(sq / double(expected.size()));
    const double max_diff = std::min(diff_batch, diff_stepped);
    EXPECT_LE(max_diff, 2 * noise + 0.03 * rms + 1e-4)
        << "prompt " << p << ", kernel noise " << noise << ", logit rms " << rms;
    EXPECT_EQ(argmax(continued), argmax(diff_batch <= diff_stepped ? expected : stepped_logits));
    for (KvSequence* s : {&draft_seq, &fresh, &stepped, &control}) draft_->pool->release(*s);
    target_->pool->release(seq);
  }
  EXPECT_GT(checked, 0);
}

TEST_F(ShippedPairTest, SampledRunCompletesWithValidTokens) {
  const auto prompts = code_prompts(target_->model->tokenizer(), 1, 120);
  AdaptiveK k_draft(1, 7, 4, 0.0), k_ngram = AdaptiveK::for_ngram(target_->gen->verify_cost());
  SpeculationStats stats;
  for (size_t p = 0; p < prompts.size(); ++p) {
    KvSequence seq, draft_seq;
    const GenerateOptions options{
        .max_tokens = 24,
        .sampling = {.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 11 + p}};
    const auto r = generate_speculative(*target_->gen, seq, prompts[p], options,
                                        {.draft = draft_->gen.get(),
                                         .draft_seq = &draft_seq,
                                         .k_draft = &k_draft,
                                         .k_ngram = &k_ngram});
    stats += r.speculation;
    EXPECT_TRUE(r.reason == StopReason::MaxTokens || r.reason == StopReason::StopToken);
    if (r.reason == StopReason::MaxTokens) {
      EXPECT_EQ(r.tokens.size(), 24u);
    }
    for (int32_t t : r.tokens) {
      EXPECT_GE(t, 0);
      EXPECT_LT(t, target_->model->config().n_vocab);
    }
    const int m = int(r.tokens.size());
    EXPECT_EQ(seq.n_tokens, int(prompts[p].size()) +
                                (r.reason == StopReason::StopToken ? m : std::max(0, m - 1)));
    EXPECT_LE(draft_seq.n_tokens, int(prompts[p].size()) + m);
    target_->pool->release(seq);
    draft_->pool->release(draft_seq);
  }
  EXPECT_GT(stats.proposed_draft, 0);
  EXPECT_GT(stats.accepted_draft + stats.accepted_ngram, 0);
}

TEST_F(ShippedPairTest, DraftWithAnotherVocabularyIsRejected) {
  Engine other(kRefF16, BackendKind::Cpu);
  KvSequence seq, draft_seq;
  const std::vector<int32_t> prompt = {10, 11, 12};
  EXPECT_THROW(generate_speculative(*target_->gen, seq, prompt, {.max_tokens = 4},
                                    {.draft = other.gen.get(), .draft_seq = &draft_seq}),
               std::invalid_argument);
  target_->pool->release(seq);
}

// The reference path computes every token alone, so identity holds there by construction of
// the arithmetic; this checks the bookkeeping on another vocabulary and model family.
TEST(SpeculativeReferenceTest, GreedyOutputIsIdenticalOnTheReferencePath) {
  Engine target(kRefF16, BackendKind::Reference, 16), draft(kRefQ4K, BackendKind::Reference, 16);
  IdentityChecker checker(target, draft);
  AdaptiveK always_draft(1, 7, 4, 0.0), k_ngram = AdaptiveK::for_ngram(target.gen->verify_cost());
  SpeculationStats stats;
  for (int p = 0; p < 2; ++p) {
    // Random weights make repetitive output: n-gram lookup finds matches.
    std::vector<int32_t> prompt;
    for (int i = 0; i < 24 + 5 * p; ++i)
      prompt.push_back(int32_t((i * 7919 + 13 * p) % 30000 + 100));
    for (Mode m : {Mode::Draft, Mode::Ngram, Mode::Both})
      stats += checker.check(prompt, {.max_tokens = 14}, m, always_draft, k_ngram,
                             "prompt " + std::to_string(p));
  }
  EXPECT_GT(stats.proposed_draft, 0);
  EXPECT_GT(stats.accepted_draft, 0);
}

// ---- rejection sampling ----

// Pearson's chi-square of observed counts against n * p.
double chi_square(const std::vector<int>& counts, std::span<const float> p, int n) {
  double chi = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has no probability under p";
      continue;
    }
    const double e = double(n) * p[i];
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

TEST(SpeculativeAcceptTest, RejectionSamplingKeepsTheTargetDistribution) {
  // 99.9% quantile of chi-square with 5 degrees of freedom: a correct sampler fails this for
  // one seed in a thousand; the seeds are fixed, so the test is deterministic.
  constexpr double kChi2Dof5 = 20.52;
  constexpr int kDraws = 200000;
  const std::vector<float> p = {0.40f, 0.25f, 0.15f, 0.10f, 0.06f, 0.04f};
  const std::vector<std::vector<float>> qs = {
      {0.10f, 0.30f, 0.30f, 0.05f, 0.05f, 0.20f},  // disagrees
      {0.40f, 0.25f, 0.15f, 0.10f, 0.06f, 0.04f},  // equal: always accepts
      {0.00f, 0.00f, 0.00f, 0.00f, 0.00f, 1.00f},  // one token p rarely takes
      {0.90f, 0.02f, 0.02f, 0.02f, 0.02f, 0.02f},  // overconfident
  };
  for (size_t qi = 0; qi < qs.size(); ++qi) {
    const auto& q = qs[qi];
    Sampler sampler({.temperature = 1.0f, .seed = 1234 + qi});
    std::vector<int> counts(p.size(), 0);
    std::vector<float> residual;
    int accepted = 0;
    for (int i = 0; i < kDraws; ++i) {
      const int32_t d = sampler.sample_from(q);
      const auto step = speculative_accept(p, q, d, sampler, residual);
      accepted += step.accepted;
      if (step.accepted) {
        EXPECT_EQ(step.token, d);
      }
      ++counts[size_t(step.token)];
    }
    EXPECT_LT(chi_square(counts, p, kDraws), kChi2Dof5) << "q #" << qi;
    // The acceptance rate is sum(min(p, q)).
    double expected_accept = 0;
    for (size_t i = 0; i < p.size(); ++i) expected_accept += std::min(p[i], q[i]);
    EXPECT_NEAR(double(accepted) / kDraws, expected_accept, 0.005) << "q #" << qi;
  }
}

TEST(SpeculativeAcceptTest, PointMassProposalKeepsTheTargetDistribution) {
  constexpr double kChi2Dof5 = 20.52;
  constexpr int kDraws = 200000;
  const std::vector<float> p = {0.40f, 0.25f, 0.15f, 0.10f, 0.06f, 0.04f};
  for (int32_t d : {0, 3, 5}) {
    Sampler sampler({.temperature = 1.0f, .seed = 99 + uint64_t(d)});
    std::vector<int> counts(p.size(), 0);
    std::vector<float> residual;
    int accepted = 0;
    for (int i = 0; i < kDraws; ++i) {
      const auto step = speculative_accept(p, {}, d, sampler, residual);
      accepted += step.accepted;
      ++counts[size_t(step.token)];
    }
    EXPECT_LT(chi_square(counts, p, kDraws), kChi2Dof5) << "drafted " << d;
    EXPECT_NEAR(double(accepted) / kDraws, p[size_t(d)], 0.005);
  }
}

TEST(SpeculativeAcceptTest, TokensOutsideTheNucleusAreNeverEmitted) {
  // p after a top-k cut has zeros: a drafted token there is always rejected, and the
  // replacement comes from p's support.
  const std::vector<float> p = {0.0f, 0.7f, 0.0f, 0.3f};
  const std::vector<float> q = {0.5f, 0.1f, 0.4f, 0.0f};
  Sampler sampler({.temperature = 1.0f, .seed = 5});
  std::vector<int> counts(p.size(), 0);
  std::vector<float> residual;
  for (int i = 0; i < 20000; ++i) {
    const int32_t d = sampler.sample_from(q);
    const auto step = speculative_accept(p, q, d, sampler, residual);
    if (d == 0 || d == 2) {
      EXPECT_FALSE(step.accepted);
    }
    ++counts[size_t(step.token)];
  }
  EXPECT_EQ(counts[0] + counts[2], 0);
  EXPECT_NEAR(double(counts[1]) / 20000, 0.7, 0.02);
}

TEST(SpeculativeAcceptTest, GreedyDistributionsAcceptOnlyTheArgmax) {
  const std::vector<float> p = {0, 0, 1, 0};
  Sampler sampler({.temperature = 1.0f, .seed = 1});
  std::vector<float> residual;
  for (int32_t d = 0; d < 4; ++d) {
    const auto step = speculative_accept(p, {}, d, sampler, residual);
    EXPECT_EQ(step.accepted, d == 2);
    EXPECT_EQ(step.token, 2);
  }
}

// ---- n-gram lookup ----

TEST(NgramProposeTest, ContinuesTheMostRecentEarlierOccurrence) {
  const std::vector<int32_t> ctx = {1, 2, 3, 7, 8, 1, 2, 3, 5, 6, 1, 2, 3};
  const auto r = ngram_propose(ctx, 4, 2, 3);
  EXPECT_EQ(r.match_len, 3);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{5, 6, 1, 2}));
}

TEST(NgramProposeTest, TriesTheLongestNFirst) {
  // [1 2 3] occurs at 0 (followed by 9); [2 3] last occurs at 5 (followed by 4).
  const std::vector<int32_t> ctx = {1, 2, 3, 9, 9, 2, 3, 4, 1, 2, 3};
  const auto longest = ngram_propose(ctx, 3, 2, 3);
  EXPECT_EQ(longest.match_len, 3);
  EXPECT_EQ(longest.tokens, (std::vector<int32_t>{9, 9, 2}));
  const auto shorter = ngram_propose(ctx, 3, 2, 2);
  EXPECT_EQ(shorter.match_len, 2);
  EXPECT_EQ(shorter.tokens, (std::vector<int32_t>{4, 1, 2}));
}

TEST(NgramProposeTest, NoMatchGivesNothing) {
  const std::vector<int32_t> ctx = {1, 2, 3, 4, 5, 6};
  const auto r = ngram_propose(ctx, 4, 1, 4);
  EXPECT_TRUE(r.tokens.empty());
  EXPECT_EQ(r.match_len, 0);
  // A match shorter than ngram_min does not count.
  const std::vector<int32_t> one = {1, 2, 3, 9, 3};
  EXPECT_TRUE(ngram_propose(one, 4, 2, 4).tokens.empty());
  EXPECT_EQ(ngram_propose(one, 4, 1, 4).tokens, (std::vector<int32_t>{9, 3}));
  EXPECT_TRUE(ngram_propose(std::vector<int32_t>{}, 4, 1, 4).tokens.empty());
  EXPECT_TRUE(ngram_propose(std::vector<int32_t>{7}, 4, 1, 4).tokens.empty());
}

TEST(NgramProposeTest, KAndTheEndOfTheContextCutTheProposal) {
  const std::vector<int32_t> ctx = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2};
  EXPECT_EQ(ngram_propose(ctx, 2, 2, 4).tokens, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(ngram_propose(ctx, 0, 2, 4).tokens.size(), 0u);
  // Repeating [1 2]: the continuation runs into the tail itself and stops at the end.
  const std::vector<int32_t> rep = {1, 2, 1, 2};
  EXPECT_EQ(ngram_propose(rep, 7, 2, 4).tokens, (std::vector<int32_t>{1, 2}));
}

// ---- adaptive k ----

TEST(AdaptiveKTest, RisesWithHighAcceptanceAndFallsWithLow) {
  AdaptiveK k(1, 7, 4, 0.1);
  EXPECT_EQ(k.k(), 4);
  int previous = 1;
  for (int i = 0; i < 40; ++i) {
    k.record(k.k(), k.k());
    EXPECT_GE(k.k(), previous);
    previous = k.k();
  }
  EXPECT_GT(k.acceptance(), 0.95);
  EXPECT_EQ(k.k(), 7);
  for (int i = 0; i < 40; ++i) {
    k.record(k.k(), 0);
    EXPECT_LE(k.k(), previous);
    previous = k.k();
  }
  EXPECT_LT(k.acceptance(), 0.05);
  EXPECT_EQ(k.k(), 1);
  // A middling acceptance gives a middling k.
  for (int i = 0; i < 200; ++i) k.record(2, i % 2 ? 2 : 1);
  EXPECT_GT(k.k(), 1);
  EXPECT_LT(k.k(), 7);
}

TEST(AdaptiveKTest, StaysWithinItsBounds) {
  AdaptiveK k(2, 5, 9, 0.1);
  EXPECT_EQ(k.k(), 5);  // the initial k is clamped too
  for (int i = 0; i < 50; ++i) k.record(5, 5);
  EXPECT_EQ(k.k(), 5);
  for (int i = 0; i < 50; ++i) k.record(5, 0);
  EXPECT_EQ(k.k(), 2);
  // A costlier source proposes fewer tokens at the same acceptance.
  AdaptiveK cheap(1, 7, 4, 0.05), dear(1, 7, 4, 0.6);
  for (int i = 0; i < 100; ++i) {
    cheap.record(3, i % 4 ? 3 : 1);
    dear.record(3, i % 4 ? 3 : 1);
  }
  EXPECT_NEAR(cheap.acceptance(), dear.acceptance(), 1e-12);
  EXPECT_GT(cheap.k(), dear.k());
}

// ---- measured costs ----

TEST(SpeculationCostsTest, PriorsUntilSomethingIsMeasured) {
  const SpeculationCosts costs({.max_tokens = 8, .per_token = 0.5},
                               {.step = 0.3, .catch_up_per_token = 0.1});
  EXPECT_DOUBLE_EQ(costs.verify(0), 1.0);
  EXPECT_DOUBLE_EQ(costs.verify(3), 2.5);
  EXPECT_DOUBLE_EQ(costs.draft_step(), 0.3);
  EXPECT_DOUBLE_EQ(costs.draft_catch_up_per_token(), 0.1);
  EXPECT_DOUBLE_EQ(costs.round_cost(3, false), 2.5);
  EXPECT_DOUBLE_EQ(costs.round_cost(3, true, 10), 2.5 + 0.9 + 1.0);
  EXPECT_FALSE(costs.measured_target(1));
  EXPECT_FALSE(costs.measured_draft_step());
}

TEST(SpeculationCostsTest, MeasuredTimesReplaceThePriors) {
  SpeculationCosts costs({.max_tokens = 8, .per_token = 0.5},
                         {.step = 0.3, .catch_up_per_token = 0.1});
  costs.record_target(1, 10.0);
  costs.record_target(5, 12.0);  // verifying 4 proposals: 1.2 steps, not the prior's 3
  costs.record_draft(1, 6.0);
  costs.record_draft(21, 42.0);  // catch-up: 2 ms a token
  EXPECT_TRUE(costs.measured_target(5));
  EXPECT_DOUBLE_EQ(costs.verify(4), 1.2);
  // A batch not measured yet: the nearest smaller measured one plus the prior's slope, but no
  // more than a larger measured batch.
  EXPECT_DOUBLE_EQ(costs.verify(6), 1.2 + 0.5 * 2);
  EXPECT_DOUBLE_EQ(costs.verify(1), 1.2);
  EXPECT_DOUBLE_EQ(costs.verify(2), 1.2);
  // Noise that makes a larger batch look cheaper than a smaller one is ignored.
  costs.record_target(7, 11.0);
  EXPECT_DOUBLE_EQ(costs.verify(6), 1.2);
  EXPECT_DOUBLE_EQ(costs.draft_step(), 0.6);
  EXPECT_DOUBLE_EQ(costs.draft_catch_up_per_token(), 0.2);
  // Later measurements move the figure (the machine got busier).
  for (int i = 0; i < 30; ++i) costs.record_draft(1, 20.0);
  EXPECT_GT(costs.draft_step(), 1.9);
  // Nonsense is ignored.
  costs.record_target(0, 5.0);
  costs.record_target(3, -1.0);
  costs.record_target(SpeculationCosts::kMaxTokens + 1, 5.0);
  EXPECT_FALSE(costs.measured_target(3));
}

TEST(SpeculationCostsTest, AStepIsDerivedFromVerificationBatchesAlone) {
  SpeculationCosts costs({.max_tokens = 8, .per_token = 0.25},
                         {.step = 0.3, .catch_up_per_token = 0.1});
  costs.record_target(5, 20.0);  // the prior's ratio for 5 tokens is 2: a step of 10 ms
  costs.record_draft(1, 5.0);
  EXPECT_DOUBLE_EQ(costs.verify(4), 2.0);
  EXPECT_DOUBLE_EQ(costs.draft_step(), 0.5);
}

TEST(SpeculationCostsTest, AStepIsDueUntilMeasuredAndWhenItsFigureIsStale) {
  SpeculationCosts costs({.max_tokens = 8, .per_token = 0.25},
                         {.step = 0.3, .catch_up_per_token = 0.1});
  EXPECT_TRUE(costs.step_due());
  costs.record_target(3, 15.0);  // a batch alone does not measure a step
  EXPECT_TRUE(costs.step_due());
  costs.record_target(1, 10.0);
  EXPECT_FALSE(costs.step_due());
  // Batches, none faster than the step: a step is due once they are kStepRefreshForwards.
  for (int i = 1; i < SpeculationCosts::kStepRefreshForwards; ++i) {
    costs.record_target(2 + i % 4, 12.0);
    costs.record_draft(1, 1.0);  // the draft's forwards do not count
    EXPECT_FALSE(costs.step_due()) << i;
  }
  costs.record_target(2, 12.0);
  EXPECT_TRUE(costs.step_due());
  costs.record_target(1, 10.0);
  EXPECT_FALSE(costs.step_due());
  // A batch measured a little faster than a step: timing noise.
  costs.record_target(5, 9.0);
  EXPECT_FALSE(costs.step_due());
  // One measured far faster: the step's figure is stale (the machine got faster since), and a
  // step is due at once.
  costs.record_target(5, 7.0);
  EXPECT_TRUE(costs.step_due());
  costs.record_target(1, 5.0);
  EXPECT_FALSE(costs.step_due());
  // Nonsense measures nothing.
  costs.record_target(0, 1.0);
  costs.record_target(2, -1.0);
  EXPECT_FALSE(costs.step_due());
}

TEST(SpeculationCostsTest, OneInterruptedForwardMovesAFigureLittle) {
  SpeculationCosts costs({.max_tokens = 8, .per_token = 0.25},
                         {.step = 0.3, .catch_up_per_token = 0.1});
  for (int i = 0; i < 6; ++i) costs.record_target(1, 10.0), costs.record_target(5, 20.0);
  EXPECT_DOUBLE_EQ(costs.verify(4), 2.0);
  // A step that took ten times as long (the thread was descheduled) counts as twice the figure.
  costs.record_target(1, 100.0);
  EXPECT_NEAR(costs.verify(4), 20.0 / 12.0, 1e-9);
  // One far faster counts as half.
  costs.record_target(5, 1.0);
  EXPECT_NEAR(costs.verify(4), 18.0 / 12.0, 1e-9);
  // A lasting change is followed within a few forwards.
  for (int i = 0; i < 30; ++i) costs.record_target(1, 40.0), costs.record_target(5, 60.0);
  EXPECT_NEAR(costs.verify(4), 1.5, 0.01);
}

TEST(SpeculationCostsTest, ADraftPaysOnlyWhenItsGainBeatsItsCost) {
  SpeculationCosts costs({.max_tokens = 8, .per_token = 0.1},
                         {.step = 0.32, .catch_up_per_token = 0.08});
  costs.record_target(1, 10.0);
  for (int n = 2; n <= 8; ++n) costs.record_target(n, 10.0 + n);
  AdaptiveK k(1, 7, 4, 0.0);
  // A cheap draft with good acceptance pays, and proposes several tokens.
  costs.record_draft(1, 1.0);
  EXPECT_GT(k.tokens_per_cost(k.best_k(0.8, costs, true), 0.8, costs, true), 1.5);
  EXPECT_GT(k.best_k(0.8, costs, true), 2);
  // The same acceptance from a draft as slow as the target: no k pays.
  SpeculationCosts slow = costs;
  for (int i = 0; i < 40; ++i) slow.record_draft(1, 10.0);
  for (int kk = 1; kk <= 7; ++kk) EXPECT_LT(k.tokens_per_cost(kk, 0.8, slow, true), 1.0);
  // Catching up on a long context costs too.
  EXPECT_LT(k.tokens_per_cost(3, 0.8, costs, true, 200), k.tokens_per_cost(3, 0.8, costs, true, 0));
  // n-gram proposals cost only their verification.
  EXPECT_GT(k.tokens_per_cost(4, 0.5, slow, false), 1.0);
}

}  // namespace
}  // namespace ghostline::engine
