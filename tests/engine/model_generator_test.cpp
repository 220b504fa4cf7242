// Generator behaviour on a shared reference model: chunking, KV reuse through shared blocks,
// batched verification, cancellation and stop conditions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/generator.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {
namespace {

// F16 weights: the fast path computes them without quantizing activations, so its results
// for different batch sizes agree to float rounding (quantized types differ by up to ~0.05
// std between the decode and prefill kernels, as they do from llama.cpp).
const char* kModel = "../shared/data/models/ref-llama-spm-f16.gguf";

// A prompt of 45 tokens (not a multiple of the block size, so partial blocks are exercised).
std::vector<int32_t> prompt_ids(int n = 45) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ids[size_t(i)] = (i * 7919 + 13) % 30000 + 100;
  return ids;
}

// Max |a - b| in units of the standard deviation of b.
double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double m = 0, mean = 0, sq = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  for (float x : b) mean += x;
  mean /= double(b.size());
  for (float x : b) sq += (x - mean) * (x - mean);
  return m / std::sqrt(sq / double(b.size()));
}

std::vector<float> copy(std::span<const float> s) {
  return {s.begin(), s.end()};
}

class GeneratorTest : public testing::TestWithParam<BackendKind> {
 protected:
  static void SetUpTestSuite() { model_ = Model::load(kModel, {.lock_resident = false}); }
  static void TearDownTestSuite() { model_.reset(); }

  KvBlockPool make_pool() {
    return KvBlockPool(model_->config().n_layer, model_->config().kv_dim(), 4 << 20);
  }
  Generator make_generator(KvBlockPool& pool, int chunk) {
    return Generator(*model_, pool, {.threads = 2, .backend = GetParam(), .chunk_tokens = chunk});
  }
  // The fast path runs different kernels for different batch sizes (the order of sums
  // changes); the reference path computes every token alone, so its results are identical.
  double tolerance() const { return GetParam() == BackendKind::Reference ? 0.0 : 1e-3; }

  static std::unique_ptr<Model> model_;
};
std::unique_ptr<Model> GeneratorTest::model_;

TEST_P(GeneratorTest, ChunkedPrefillEqualsOneShot) {
  const auto ids = prompt_ids();
  KvBlockPool pool = make_pool();
  Generator one = make_generator(pool, 64), chunked = make_generator(pool, 7);
  KvSequence a, b;
  ASSERT_TRUE(one.forward(a, ids));
  ASSERT_TRUE(chunked.forward(b, ids));
  EXPECT_EQ(a.n_tokens, 45);
  EXPECT_EQ(b.blocks.size(), 3u);
  EXPECT_LE(max_abs_diff(one.logits(0), chunked.logits(0)), tolerance());
  pool.release(a);
  pool.release(b);
}

TEST_P(GeneratorTest, ReusedPrefixKvGivesTheLogitsOfAFreshRun) {
  const auto ids = prompt_ids();
  KvBlockPool pool = make_pool();
  Generator gen = make_generator(pool, 16);
  KvSequence fresh;
  ASSERT_TRUE(gen.forward(fresh, ids));
  const auto expected = copy(gen.logits(0));

  // A sequence that computed the first 21 tokens and then went elsewhere; its prefix is
  // shared (block 1 partially) and the rest run on top of it.
  KvSequence first;
  ASSERT_TRUE(gen.forward(first, std::span(ids).first(21), LogitsRequest::none()));
  KvSequence reused = pool.share(first, 21);
  const std::vector<int32_t> other = {5, 6, 7, 8, 9};
  ASSERT_TRUE(gen.forward(first, other));
  const auto first_logits = copy(gen.logits(0));
  ASSERT_TRUE(gen.forward(reused, std::span(ids).subspan(21)));
  EXPECT_LE(max_abs_diff(gen.logits(0), expected), tolerance());

  // The sequence whose prefix was shared is unchanged by the other's extension.
  KvSequence again;
  std::vector<int32_t> first_ids(ids.begin(), ids.begin() + 21);
  first_ids.insert(first_ids.end(), other.begin(), other.end());
  ASSERT_TRUE(gen.forward(again, first_ids));
  EXPECT_LE(max_abs_diff(gen.logits(0), first_logits), tolerance());

  for (KvSequence* s : {&fresh, &first, &reused, &again}) pool.release(*s);
  EXPECT_EQ(pool.stats().blocks_used, 0);
}

TEST_P(GeneratorTest, BatchedLogitsEqualStepByStep) {
  const auto ids = prompt_ids(30);
  KvBlockPool pool = make_pool();
  Generator gen = make_generator(pool, 32);
  KvSequence batched, stepped;
  ASSERT_TRUE(gen.forward(batched, std::span(ids).first(25)));
  // Verifying 5 tokens at once (as speculative decoding does) ...
  ASSERT_TRUE(gen.forward(batched, std::span(ids).subspan(25), LogitsRequest::last_n_of(5)));
  std::vector<std::vector<float>> all;
  for (int i = 0; i < 5; ++i) all.push_back(copy(gen.logits(i)));
  // ... gives the logits of feeding them one by one.
  ASSERT_TRUE(gen.forward(stepped, std::span(ids).first(25)));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(gen.forward(stepped, std::span(ids).subspan(size_t(25 + i), 1)));
    EXPECT_LE(max_abs_diff(gen.logits(0), all[size_t(i)]), tolerance()) << "position " << i;
  }
  // Rejecting the last 3 drafts and running another token matches a fresh computation.
  pool.truncate(batched, 27);
  const int32_t other[1] = {1234};
  ASSERT_TRUE(gen.forward(batched, other));
  const auto after_truncate = copy(gen.logits(0));
  KvSequence fresh;
  std::vector<int32_t> expect_ids(ids.begin(), ids.begin() + 27);
  expect_ids.push_back(1234);
  ASSERT_TRUE(gen.forward(fresh, expect_ids));
  EXPECT_LE(max_abs_diff(gen.logits(0), after_truncate), tolerance());
  for (KvSequence* s : {&batched, &stepped, &fresh}) pool.release(*s);
}

// A greedy-only request gives each row's argmax without handing over the logits, and the
// same tokens whether the wanted rows fall in one prefill chunk or several.
TEST_P(GeneratorTest, GreedyTokensAreTheArgmaxOfTheLogits) {
  const auto ids = prompt_ids();
  KvBlockPool pool = make_pool();
  for (const int chunk : {64, 4}) {
    SCOPED_TRACE(testing::Message() << "chunk " << chunk);
    Generator gen = make_generator(pool, chunk);
    KvSequence a, b;
    ASSERT_TRUE(gen.forward(a, ids, LogitsRequest::last_n_of(6)));
    std::vector<int32_t> expected;
    for (int i = 0; i < 6; ++i) {
      expected.push_back(argmax(gen.logits(i)));
      EXPECT_EQ(gen.greedy_token(i), expected.back());
    }
    ASSERT_TRUE(gen.forward(b, ids, LogitsRequest::greedy_last_n_of(6)));
    ASSERT_EQ(gen.n_logits(), 6);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(gen.greedy_token(i), expected[size_t(i)]) << i;
    EXPECT_THROW(gen.logits(0), std::logic_error);
    EXPECT_THROW(gen.greedy_token(6), std::out_of_range);
    // The next request for logits hands them over again.
    const int32_t step[1] = {expected.back()};
    ASSERT_TRUE(gen.forward(b, step));
    EXPECT_EQ(gen.greedy_token(0), argmax(gen.logits(0)));
    pool.release(a);
    pool.release(b);
  }
}

TEST_P(GeneratorTest, CancelledForwardStopsBetweenChunks) {
  KvBlockPool pool = make_pool();
  Generator gen = make_generator(pool, 8);
  std::atomic<bool> cancel{true};
  KvSequence seq;
  EXPECT_FALSE(gen.forward(seq, prompt_ids(), LogitsRequest::last(), &cancel));
  EXPECT_EQ(seq.n_tokens, 0);
  EXPECT_EQ(gen.n_logits(), 0);
  EXPECT_THROW(gen.logits(0), std::out_of_range);
  pool.release(seq);
}

TEST_P(GeneratorTest, GenerateHonoursItsLimits) {
  const auto ids = prompt_ids(20);
  KvBlockPool pool = make_pool();
  Generator gen = make_generator(pool, 16);

  KvSequence seq;
  auto full = gen.generate(seq, ids, {.max_tokens = 6});
  ASSERT_EQ(full.tokens.size(), 6u);
  EXPECT_EQ(full.reason, StopReason::MaxTokens);
  EXPECT_EQ(full.prefilled_tokens, 20);
  EXPECT_EQ(seq.n_tokens, 20 + 5);  // the last sampled token has not been run
  pool.release(seq);

  // Greedy output is what argmax over the logits gives, step by step.
  KvSequence manual;
  ASSERT_TRUE(gen.forward(manual, ids));
  for (size_t i = 0; i < 6; ++i) {
    const int32_t t = argmax(gen.logits(0));
    EXPECT_EQ(t, full.tokens[i]);
    const int32_t step[1] = {t};
    ASSERT_TRUE(gen.forward(manual, step));
  }
  pool.release(manual);

  // A stop token ends generation without being returned.
  // Stop at the last distinct token of the greedy output (random weights repeat tokens).
  size_t stop_at = 0;
  for (size_t i = 0; i < full.tokens.size(); ++i)
    if (std::find(full.tokens.begin(), full.tokens.begin() + i, full.tokens[i]) ==
        full.tokens.begin() + i)
      stop_at = i;
  auto stopped = gen.generate(seq, ids, {.max_tokens = 6, .stop_tokens = {full.tokens[stop_at]}});
  EXPECT_EQ(stopped.reason, StopReason::StopToken);
  EXPECT_EQ(stopped.tokens,
            std::vector<int32_t>(full.tokens.begin(), full.tokens.begin() + stop_at));
  pool.release(seq);

  // The stop rule callback sees each token as it is accepted.
  std::vector<int32_t> seen;
  auto rule = gen.generate(seq, ids, {.max_tokens = 6, .should_stop = [&](int32_t token) {
                                        seen.push_back(token);
                                        return seen.size() == 2;
                                      }});
  EXPECT_EQ(rule.reason, StopReason::Callback);
  EXPECT_EQ(rule.tokens.size(), 2u);
  EXPECT_EQ(seen, rule.tokens);
  pool.release(seq);

  // Cancelling after the third token stops before another step is run.
  std::atomic<bool> cancel{false};
  int streamed = 0;
  auto cancelled =
      gen.generate(seq, ids, {.max_tokens = 6, .cancel = &cancel, .on_token = [&](int32_t) {
                                if (++streamed == 3) cancel = true;
                              }});
  EXPECT_EQ(cancelled.reason, StopReason::Cancelled);
  EXPECT_EQ(cancelled.tokens.size(), 3u);
  EXPECT_EQ(seq.n_tokens, 20 + 2);
  pool.release(seq);

  // A deadline already passed stops before prefill.
  auto late =
      gen.generate(seq, ids, {.max_tokens = 6, .deadline = std::chrono::steady_clock::now()});
  EXPECT_EQ(late.reason, StopReason::Deadline);
  EXPECT_TRUE(late.tokens.empty());
  pool.release(seq);
}

TEST_P(GeneratorTest, GenerateReusesKvTheSequenceAlreadyHolds) {
  const auto ids = prompt_ids(40);
  KvBlockPool pool = make_pool();
  Generator gen = make_generator(pool, 16);
  KvSequence cold;
  const auto expected = gen.generate(cold, ids, {.max_tokens = 4});

  KvSequence warm;
  ASSERT_TRUE(gen.forward(warm, std::span(ids).first(33), LogitsRequest::none()));
  const auto r = gen.generate(warm, ids, {.max_tokens = 4});
  EXPECT_EQ(r.reused_tokens, 33);
  EXPECT_EQ(r.prefilled_tokens, 7);
  EXPECT_EQ(r.tokens, expected.tokens);

  // A sequence holding the whole prompt re-runs only its last token.
  KvSequence whole;
  ASSERT_TRUE(gen.forward(whole, ids, LogitsRequest::none()));
  const auto r2 = gen.generate(whole, ids, {.max_tokens = 4});
  EXPECT_EQ(r2.reused_tokens, 39);
  EXPECT_EQ(r2.prefilled_tokens, 1);
  EXPECT_EQ(r2.tokens, expected.tokens);
  for (KvSequence* s : {&cold, &warm, &whole}) pool.release(*s);
}

TEST_P(GeneratorTest, RejectsTokensOutsideTheVocabularyOrContext) {
  KvBlockPool pool = make_pool();
  Generator gen = make_generator(pool, 16);
  KvSequence seq;
  const std::vector<int32_t> bad = {1, model_->config().n_vocab};
  EXPECT_THROW(gen.forward(seq, bad), std::invalid_argument);
  std::vector<int32_t> too_long(size_t(model_->n_ctx()) + 1, 1);
  EXPECT_THROW(gen.forward(seq, too_long), std::invalid_argument);
  EXPECT_EQ(seq.n_tokens, 0);
  pool.release(seq);
}

TEST_P(GeneratorTest, PoolExhaustionIsReported) {
  // Two blocks: 32 tokens fit, 33 do not.
  KvBlockPool pool(model_->config().n_layer, model_->config().kv_dim(), 1);
  KvBlockPool two(model_->config().n_layer, model_->config().kv_dim(), 2 * pool.block_bytes());
  Generator gen = make_generator(two, 16);
  KvSequence seq;
  EXPECT_TRUE(gen.forward(seq, prompt_ids(32)));
  const int32_t one[1] = {5};
  EXPECT_THROW(gen.forward(seq, one), KvPoolExhausted);
  EXPECT_EQ(seq.n_tokens, 32);
  two.release(seq);
}

INSTANTIATE_TEST_SUITE_P(Paths, GeneratorTest,
                         testing::Values(BackendKind::Cpu, BackendKind::Reference),
                         [](const auto& info) {
                           return info.param == BackendKind::Cpu ? "fast" : "reference";
                         });

}  // namespace
}  // namespace ghostline::engine
