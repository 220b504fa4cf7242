// The engine's entry point for completions: runs a model over block-table sequences
// (prefill in chunks, batched verification of several tokens, single decode steps) and a
// convenience loop that generates with stop conditions, cancellation and a deadline.
//
//   auto model = Model::load(path);                      // throws ModelError / GgufError
//   KvBlockPool pool(cfg.n_layer, cfg.kv_dim(), 256 << 20);
//   Generator gen(*model, pool, {.threads = 2});
//   KvSequence seq;                                      // or a prefix shared from the cache
//   auto r = gen.generate(seq, prompt_ids, {.max_tokens = 32, .cancel = &flag});
//   pool.release(seq);                                   // or hand it to the prefix cache
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"

namespace ghostline::engine {

class Generator;

struct GeneratorOptions {
  int threads = 1;
  BackendKind backend = BackendKind::Cpu;
  // Prefill is split into chunks of this many tokens. The deadline is checked between chunks and
  // cancellation also between the layers of one, so a chunk can be large enough to use the
  // weights it reads for many tokens.
  int chunk_tokens = 32;
  // A generator whose CPU compute threads this one runs on (when it has as many): a draft
  // beside its target, which never runs at the same time as it. One set of threads on the
  // cores rather than two, of which the idle one would spin beside the working one for a while
  // after each forward. It must outlive the constructor only.
  const Generator* share_threads_with = nullptr;
};

// Which positions of a forward call need logits: the last `last_n` tokens of the call.
// Prefill wants 1; verifying k draft tokens after the last accepted one wants k + 1. With
// `greedy_only`, only the greedy token of each is wanted (Generator::greedy_token): a device
// backend then hands over token ids instead of the logits.
struct LogitsRequest {
  int last_n = 1;
  bool greedy_only = false;
  static LogitsRequest last() { return {1}; }
  static LogitsRequest none() { return {0}; }
  static LogitsRequest last_n_of(int n) { return {n}; }
  static LogitsRequest greedy_last_n_of(int n) { return {n, true}; }
  // The last n rows, as a sampler needs them: the greedy tokens alone when it is greedy.
  static LogitsRequest for_sampler(int n, const SamplerOptions& s) { return {n, s.greedy()}; }
};

enum class StopReason {
  MaxTokens,    // generated max_tokens
  StopToken,    // sampled EOS/EOT or one of GenerateOptions::stop_tokens (not included)
  Callback,     // should_stop returned true
  Cancelled,    // *cancel became true
  Deadline,     // the deadline passed
  ContextFull,  // the sequence reached the model's context length
};

const char* stop_reason_name(StopReason reason);

struct GenerateOptions {
  int max_tokens = 64;
  SamplerOptions sampling{};
  std::vector<int32_t> stop_tokens{};  // besides the model's EOS and EOT
  // Called with each accepted token, in order, after on_token; true stops. Text stop rules keep
  // their own state, so each token costs the same whatever the length of the completion.
  std::function<bool(int32_t token)> should_stop{};
  const std::atomic<bool>* cancel = nullptr;
  std::optional<std::chrono::steady_clock::time_point> deadline{};
  // Called with each accepted token as it is generated (streaming).
  std::function<void(int32_t token)> on_token{};
  // When set, on_answer_early is called once, with the tokens generated so far, at the first decode
  // step after this time; generation goes on to the deadline. The caller answers with what is
  // ready by then and keeps computing.
  std::optional<std::chrono::steady_clock::time_point> answer_early_at{};
  std::function<void(std::span<const int32_t> generated)> on_answer_early{};
};

// Decode work of one generation, for speculative decoding and cancellation accounting. The
// plain loop fills target_steps and steps_after_cancel; generate_speculative (speculative.h)
// fills all.
struct SpeculationStats {
  int target_steps = 0;  // target forward calls after prefill (verification or single step)
  int draft_steps = 0;   // draft forward calls (catch-up and proposals)
  int proposed_draft = 0, accepted_draft = 0;
  int proposed_ngram = 0, accepted_ngram = 0;
  int steps_after_cancel = 0;  // forward calls (target or draft) that ended with *cancel set

  SpeculationStats& operator+=(const SpeculationStats& o) {
    target_steps += o.target_steps;
    draft_steps += o.draft_steps;
    proposed_draft += o.proposed_draft;
    accepted_draft += o.accepted_draft;
    proposed_ngram += o.proposed_ngram;
    accepted_ngram += o.accepted_ngram;
    steps_after_cancel += o.steps_after_cancel;
    return *this;
  }
};

struct GenerateResult {
  std::vector<int32_t> tokens{};  // generated tokens, stop token excluded
  StopReason reason = StopReason::MaxTokens;
  int prompt_tokens = 0;
  int reused_tokens = 0;     // prompt tokens whose KV the sequence already held
  int prefilled_tokens = 0;  // prompt tokens computed by this call
  double prefill_ms = 0;
  double decode_ms = 0;  // time to produce all but the first token
  SpeculationStats speculation{};
};

// Not thread-safe: one engine thread drives a Generator and its KvBlockPool. The Model is
// immutable after loading and may be shared by several Generators (a target and a draft each
// have their own pool and Generator).
class Generator {
 public:
  Generator(const Model& model, KvBlockPool& pool, const GeneratorOptions& options = {});
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  const Model& model() const { return model_; }
  KvBlockPool& pool() { return pool_; }
  const GeneratorOptions& options() const { return options_; }
  // Prefill chunk size from now on (e.g. once the speed is measured), clamped to [1, the
  // chunk_tokens the Generator was made with, for which its buffers are sized].
  void set_chunk_tokens(int n);

  // Runs the model over `tokens` appended at positions seq.n_tokens.. of `seq`, allocating
  // blocks as needed (a shared partial last block is copied first). Afterwards logits(i) for
  // i < request.last_n are the logits after the (tokens.size() - last_n + i)-th token. Checks
  // `cancel` between chunks and between layers; returns false if it stopped early, in which case
  // `seq` holds the chunks that were completed and no logits are valid. Throws KvPoolExhausted, or
  // std::invalid_argument when the tokens exceed the context or the vocabulary.
  bool forward(KvSequence& seq, std::span<const int32_t> tokens, LogitsRequest request = {},
               const std::atomic<bool>* cancel = nullptr);

  int n_logits() const { return n_logits_; }
  // The argmax of row i (ties to the lowest id), whether the last forward asked for the logits
  // or for the greedy tokens alone.
  int32_t greedy_token(int i) const;
  // Row i's next token by `sampler`: its greedy token, or a draw from its logits.
  int32_t next_token(Sampler& sampler, int i) const;
  VerifyCost verify_cost() const { return backend_->verify_cost(); }
  DraftCost draft_cost() const { return backend_->draft_cost(); }
  std::string_view backend_name() const { return backend_->name(); }
  // Whether this generator's CPU kernels run on the same threads as `other`'s.
  bool shares_threads_with(const Generator& other) const;
  // Calls of forward() that computed at least one chunk, since construction: lets tests count
  // model work (cancellation stops within one step) without timing anything.
  int64_t forward_calls() const { return forward_calls_; }
  // Row i's logits; throws std::logic_error after a forward that wanted greedy tokens only.
  std::span<const float> logits(int i) const;

  // Prompt -> up to max_tokens generated tokens. `seq` may already hold the KV of a prefix of
  // `prompt` (from the prefix cache): only the rest is prefilled. On return `seq` holds the KV
  // of the prompt and of every generated token except the last one (which was sampled but not
  // yet run), whatever the stop reason; the caller releases it or gives it to the cache.
  GenerateResult generate(KvSequence& seq, std::span<const int32_t> prompt,
                          const GenerateOptions& options);

  // The first half of generate(), shared with speculative decoding: sets r's prompt counts and
  // prefills what `seq` lacks of `prompt` in chunks, honouring cancel and the deadline between
  // chunks. Returns true with row 0 giving the first token (next_token with a sampler of
  // options.sampling; logits(0) only when that sampler is not greedy); false with r.reason set
  // (Cancelled or Deadline) when it stopped early.
  bool prefill(KvSequence& seq, std::span<const int32_t> prompt, const GenerateOptions& options,
               GenerateResult& r);
  // GenerateOptions::stop_tokens plus the model's EOS and EOT.
  std::vector<int32_t> stop_tokens(const GenerateOptions& options) const;

 private:
  const Model& model_;
  KvBlockPool& pool_;
  GeneratorOptions options_;
  std::unique_ptr<Backend> backend_;
  std::vector<float> logits_;
  std::vector<int32_t> greedy_;  // the rows' greedy tokens, after a greedy_only request
  int n_logits_ = 0;
  bool greedy_only_ = false;
  int64_t forward_calls_ = 0;
  int max_chunk_tokens_ = 1;
};

}  // namespace ghostline::engine
