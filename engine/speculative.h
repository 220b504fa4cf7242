// Speculative decoding: cheap proposals (a small draft model with the target's vocabulary, or
// n-gram lookup in the prompt and what was generated) verified by the target in one batched
// forward pass. Greedy output is token-for-token what Generator::generate gives; sampled output
// follows the target's distribution (speculative rejection sampling).
//
//   AdaptiveK k_draft = AdaptiveK::for_draft(target.verify_cost(), target.draft_cost()),
//             k_ngram = ...;  // per document
//   Speculation spec{.draft = &draft_gen, .draft_seq = &draft_seq,
//                    .k_draft = &k_draft, .k_ngram = &k_ngram};
//   auto r = generate_speculative(target_gen, seq, prompt_ids, {.max_tokens = 32}, spec);
//   // seq: as after generate(); draft_seq: draft KV of a prefix of prompt + r.tokens
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/generator.h"

namespace ghostline::engine {

class SpeculationCosts;

// Running acceptance of one draft source and the number of tokens k it should propose.
// Acceptance is the probability that a proposed token is accepted given that the ones before
// it were: the mean of the accept/reject outcomes of single tokens (with a prior of 0.5 worth
// two outcomes), an exponential moving average once a few were seen.
// A round proposing k tokens is expected to emit E(k) = 1 + a + ... + a^k tokens (the accepted
// ones and the target's own) for a cost of 1 + cost_per_token * k target decode steps.
class AdaptiveK {
 public:
  // cost_per_token: the work of proposing and verifying one more token, in target decode
  // steps (a draft forward plus a little verification; for n-gram lookup only the latter).
  explicit AdaptiveK(int k_min = 1, int k_max = 7, int k_initial = 4, double cost_per_token = 0.1);
  // Defaults for the two sources on a target whose backend verifies tokens at `cost`
  // (Generator::verify_cost()) and runs a draft beside it at `draft` (Generator::draft_cost()).
  static AdaptiveK for_draft(const VerifyCost& cost, const DraftCost& draft);
  static AdaptiveK for_ngram(const VerifyCost& cost);

  // A round proposed `proposed` tokens of which the first `accepted` were accepted.
  void record(int proposed, int accepted);
  // A round where this source had a proposal but it was not used; after many in a row the
  // caller tries it again (its estimate may be stale).
  void skip() { ++skipped_; }
  int skipped() const { return skipped_; }
  // Current estimate (a prior of 0.5 until something is recorded).
  double acceptance() const { return acceptance_; }
  int rounds() const { return rounds_; }
  // The k in [k_min, k_max] maximizing expected tokens per unit of cost at this acceptance
  // (k_initial until a round was recorded).
  int k() const;
  // The k in [k_min, k_max] maximizing expected tokens per unit of cost at acceptance a.
  int best_k(double a) const;
  // Expected tokens per unit of cost of a round proposing k tokens with acceptance a (1 is
  // what a plain decode step gives).
  double tokens_per_cost(int k, double a) const;
  double tokens_per_cost(int k) const { return tokens_per_cost(k, acceptance_); }
  // The same with the round costs measured on this machine (`draft`: the proposals come from
  // the draft model, which had `lag` tokens of context to catch up on).
  int best_k(double a, const SpeculationCosts& costs, bool draft, int lag = 0) const;
  double tokens_per_cost(int k, double a, const SpeculationCosts& costs, bool draft,
                         int lag = 0) const;
  double cost_per_token() const { return cost_per_token_; }
  int k_min() const { return k_min_; }
  int k_max() const { return k_max_; }

  // 1 + a + ... + a^k.
  static double expected_tokens(double a, int k);

 private:
  int k_min_, k_max_, k_initial_;
  double cost_per_token_;
  double acceptance_ = 0.5;
  int rounds_ = 0;
  int skipped_ = 0;
  int outcomes_ = 0;  // accept/reject outcomes recorded
};

// What proposing and verifying cost on the machine that runs them, in target decode steps,
// measured from the forward calls the speculative loop makes: the target's time for a forward
// of n tokens (n = 1 is a plain decode step; [last token, d1..dk] is n = k + 1), the draft's for
// one step and per token when it catches up on context. Until a figure is measured it comes
// from priors: the backend's VerifyCost for the target, its DraftCost for the draft.
// One per target/draft pair (costs belong to the machine, acceptance to the document).
class SpeculationCosts {
 public:
  static constexpr int kMaxTokens = 17;  // forwards of up to 16 proposals and the last token

  SpeculationCosts(const VerifyCost& target_prior, const DraftCost& draft_prior);

  void record_target(int n_tokens, double ms);
  void record_draft(int n_tokens, double ms);

  // Cost of a target forward of k + 1 tokens (verifying k proposals) against a single step.
  double verify(int k) const;
  double draft_step() const;
  double draft_catch_up_per_token() const;
  // Cost of a round that proposes k tokens: verification, plus k draft steps and `lag` tokens of
  // catch-up when they come from the draft.
  double round_cost(int k, bool draft, int lag = 0) const {
    return verify(k) + (draft ? k * draft_step() + lag * draft_catch_up_per_token() : 0.0);
  }
  bool measured_target(int n_tokens) const;
  bool measured_draft_step() const { return draft_step_.n > 0; }
  // Whether the next target forward should be a plain step, to measure one: none was yet, or
  // the last was kStepRefreshForwards target forwards ago, or a verification batch since took
  // clearly less time than the step's figure (which only a stale figure explains). Every cost of
  // verification is a ratio to the step, and the step is measured only in rounds that propose
  // nothing, which a source that is used every round leaves out.
  bool step_due() const;

  static constexpr int kStepRefreshForwards = 32;

 private:
  struct Mean {  // running mean in ms, recent forwards weighted more
    double ms = 0;
    int n = 0;
    void add(double x);
  };
  double step_ms() const;  // a single target step, measured or derived from another batch size

  VerifyCost prior_;
  DraftCost draft_prior_;
  Mean target_[kMaxTokens + 1];
  int64_t target_forwards_ = 0;       // target forwards measured
  int64_t step_measured_at_ = 0;      // target_forwards_ after the last step
  bool batch_below_step_ = false;     // a batch since took clearly less than the step's figure
  Mean draft_step_, draft_catch_up_;  // catch-up: per token
};

// Prompt lookup: the continuation after the most recent earlier occurrence of the context's
// last n tokens, trying n from ngram_max down to ngram_min. Returns up to k tokens (none: no
// match) and the n that matched (its support).
struct NgramProposal {
  std::vector<int32_t> tokens;
  int match_len = 0;
};
NgramProposal ngram_propose(std::span<const int32_t> context, int k, int ngram_min, int ngram_max);

// One position of speculative rejection sampling. `drafted` was drawn from q (empty q: a point
// mass on `drafted`, as an n-gram proposal is) and is accepted with probability
// min(1, p[drafted] / q[drafted]); otherwise the replacement is drawn from
// norm(max(0, p - q)). Either way the token returned is distributed as p. `residual` is
// scratch. Draws from `sampler`'s generator.
struct RejectionStep {
  bool accepted = false;
  int32_t token = -1;
};
RejectionStep speculative_accept(std::span<const float> p, std::span<const float> q,
                                 int32_t drafted, Sampler& sampler, std::vector<float>& residual);

// Where proposals come from. The draft Generator has its own model (same vocabulary as the
// target) and its own KvBlockPool.
struct Speculation {
  Generator* draft = nullptr;       // draft model; null: n-gram proposals only
  KvSequence* draft_seq = nullptr;  // draft KV; may hold a cached prefix of the prompt
  bool ngram = true;
  int ngram_min = 2, ngram_max = 4;
  AdaptiveK* k_draft = nullptr;  // caller-owned running statistics (per document / language);
  AdaptiveK* k_ngram = nullptr;  //   null: a default local to the call
  // Measured costs of this target/draft pair, updated by the call. Null: each source's
  // AdaptiveK cost model alone (a fixed cost per proposed token).
  SpeculationCosts* costs = nullptr;
};

// Like Generator::generate, with the same options, stop rules and contract for `seq`, but each
// step verifies a proposal. Per round: the n-gram proposal (when it matched with n >=
// ngram_min) and the draft model's are compared by expected tokens per cost from their running
// acceptance (a longer match counts as stronger support; n-gram lookup costs no forward and wins
// ties); a source is used only when it is expected to give more tokens per unit of time than a
// plain decode step (with spec.costs, from the costs measured on this machine), and a round
// without a worthwhile proposal is a plain decode step. A source skipped many rounds in a row is
// tried once more, so that a stale estimate recovers. The target runs [last
// token, d1..dk] in one forward; greedy accepts while its argmax equals d_i and then emits its
// own token (or the bonus token after all k), sampling uses speculative_accept. k never exceeds
// the tokens max_tokens still allows, the context, or the target's VerifyCost::max_tokens - 1
// (15 on the CPU, whose batches of up to 16 tokens take the per-token decode kernels, so greedy
// verification is exactly the plain loop's arithmetic).
//
// Stop rules as in the plain loop: stop tokens end generation unreturned; max_tokens is never
// exceeded; should_stop and on_token run for each emitted token in order (tokens verified after a
// stop are dropped); cancel is checked after each emitted token and before every forward (target
// or draft; a draft proposal interrupted by it is dropped); the deadline before every forward.
//
// The draft KV is caught up lazily, in one batched forward over the context it lacks, right
// before the draft proposes, and truncated after verification: it never holds KV of a rejected
// token. On return *draft_seq holds the draft KV of a prefix of prompt + result.tokens (to insert
// into the draft's radix tree). Throws std::invalid_argument when the draft's vocabulary differs
// from the target's.
GenerateResult generate_speculative(Generator& target, KvSequence& seq,
                                    std::span<const int32_t> prompt, const GenerateOptions& options,
                                    const Speculation& spec);

}  // namespace ghostline::engine
