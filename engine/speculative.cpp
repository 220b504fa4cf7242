#include "engine/speculative.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "base/clock.h"
#include "engine/generation_limits.h"

namespace ghostline::engine {
namespace {

// Weight of one accept/reject outcome in the running acceptance, once a few were seen.
constexpr double kAcceptanceWeight = 0.1;

// A source is used only when it is expected to give this many tokens per unit of cost (a plain
// step gives 1): below it, the gain is within what the estimates can be off by.
constexpr double kMinTokensPerCost = 1.05;

// Weight of the newest forward in a running cost, once a few were measured.
constexpr double kCostWeight = 0.2;
// Forwards measured before an outlier is clipped to the running cost's range.
constexpr int kCostClipAfter = 4;
// A batch of several tokens costs at least a step: one measured at less than this share of
// the step's figure says the figure is stale (within it, timing noise can explain it).
constexpr double kStaleBatchShare = 0.75;

// A source skipped this many rounds in a row (its estimate said it would not pay) is tried
// once more, so that a stale low estimate can recover.
constexpr int kProbeAfterSkips = 32;
// A draft's probe costs what its round is expected to lose, the draft's catch-up on the context
// it has not seen included (a whole prompt, when it has not run since the last one): probes are
// spaced so that this is at most this share of the decoding.
constexpr double kDraftProbeShare = 0.02;

// A verification batch of [last token, d1..dk] must stay within what the backend computes as
// single steps, so that greedy output equals the plain loop's.
int max_proposal(const VerifyCost& cost) { return std::max(1, cost.max_tokens - 1); }

}  // namespace

// ---- AdaptiveK ----

AdaptiveK::AdaptiveK(int k_min, int k_max, int k_initial, double cost_per_token)
    : k_min_(std::max(1, k_min)),
      k_max_(std::max(k_min_, k_max)),
      k_initial_(std::clamp(k_initial, k_min_, k_max_)),
      cost_per_token_(std::max(0.0, cost_per_token)) {}

AdaptiveK AdaptiveK::for_draft(const VerifyCost& cost, const DraftCost& draft) {
  return AdaptiveK(1, max_proposal(cost), 3, draft.step + cost.per_token);
}
AdaptiveK AdaptiveK::for_ngram(const VerifyCost& cost) {
  return AdaptiveK(1, max_proposal(cost), 4, cost.per_token);
}

void AdaptiveK::record(int proposed, int accepted) {
  if (proposed <= 0) return;
  accepted = std::clamp(accepted, 0, proposed);
  // Each accepted token is a success; the first rejected one (if any) a failure. Tokens after
  // it were never tested. The first outcomes count as in a mean with the prior worth two
  // outcomes (so that a draft that fails from the start is known as bad within a few rounds),
  // later ones with a fixed weight (so that the estimate follows the text).
  auto weight = [&] { return std::max(1.0 / (++outcomes_ + 2), kAcceptanceWeight); };
  for (int i = 0; i < accepted; ++i) acceptance_ += weight() * (1.0 - acceptance_);
  if (accepted < proposed) acceptance_ -= weight() * acceptance_;
  ++rounds_;
  skipped_ = 0;
}

double AdaptiveK::expected_tokens(double a, int k) {
  double sum = 1, term = 1;
  for (int i = 0; i < k; ++i) {
    term *= a;
    sum += term;
  }
  return sum;
}

double AdaptiveK::tokens_per_cost(int k, double a) const {
  return expected_tokens(a, k) / (1.0 + cost_per_token_ * k);
}

int AdaptiveK::k() const {
  return rounds_ == 0 ? k_initial_ : best_k(acceptance_);
}

int AdaptiveK::best_k(double a) const {
  int best = k_min_;
  for (int k = k_min_ + 1; k <= k_max_; ++k)
    if (tokens_per_cost(k, a) > tokens_per_cost(best, a)) best = k;
  return best;
}

int AdaptiveK::best_k(double a, const SpeculationCosts& costs, bool draft, int lag) const {
  int best = k_min_;
  double best_value = tokens_per_cost(best, a, costs, draft, lag);
  for (int k = k_min_ + 1; k <= k_max_; ++k)
    if (const double v = tokens_per_cost(k, a, costs, draft, lag); v > best_value)
      best = k, best_value = v;
  return best;
}

double AdaptiveK::tokens_per_cost(int k, double a, const SpeculationCosts& costs, bool draft,
                                  int lag) const {
  return expected_tokens(a, k) / costs.round_cost(k, draft, lag);
}

// ---- SpeculationCosts ----

void SpeculationCosts::Mean::add(double x) {
  // A forward that the OS interrupted (another process, a page fault) can take several times
  // its usual time: once a few are measured, one counts as at most twice or half the figure,
  // so that it moves the figure by at most kCostWeight of it. A lasting change of the
  // machine's load still moves it all the way within a few forwards.
  if (n >= kCostClipAfter) x = std::clamp(x, 0.5 * ms, 2.0 * ms);
  ++n;
  // The first measurements count equally; later ones with a fixed weight, so that the figure
  // follows the context's depth and the machine's load.
  ms += std::max(1.0 / n, kCostWeight) * (x - ms);
}

SpeculationCosts::SpeculationCosts(const VerifyCost& target_prior, const DraftCost& draft_prior)
    : prior_(target_prior), draft_prior_(draft_prior) {}

void SpeculationCosts::record_target(int n_tokens, double ms) {
  if (n_tokens < 1 || n_tokens > kMaxTokens || ms <= 0) return;
  ++target_forwards_;
  if (n_tokens == 1) {
    step_measured_at_ = target_forwards_;
    batch_below_step_ = false;
  } else if (target_[1].n > 0 && ms < kStaleBatchShare * target_[1].ms) {
    batch_below_step_ = true;
  }
  target_[n_tokens].add(ms);
}

bool SpeculationCosts::step_due() const {
  return target_[1].n == 0 || batch_below_step_ ||
         target_forwards_ - step_measured_at_ >= kStepRefreshForwards;
}

void SpeculationCosts::record_draft(int n_tokens, double ms) {
  if (n_tokens < 1 || ms <= 0) return;
  if (n_tokens == 1)
    draft_step_.add(ms);
  else
    draft_catch_up_.add(ms / n_tokens);
}

bool SpeculationCosts::measured_target(int n_tokens) const {
  return n_tokens >= 1 && n_tokens <= kMaxTokens && target_[n_tokens].n > 0;
}

double SpeculationCosts::step_ms() const {
  if (target_[1].n > 0) return target_[1].ms;
  // Only verification batches measured yet: a step from the smallest, by the prior's ratio.
  for (int n = 2; n <= kMaxTokens; ++n)
    if (target_[n].n > 0) return target_[n].ms / (1.0 + prior_.per_token * (n - 1));
  return 0;
}

double SpeculationCosts::verify(int k) const {
  const int n = k + 1;
  if (n <= 1) return 1.0;
  const double step = step_ms();
  if (step <= 0) return 1.0 + prior_.per_token * (n - 1);
  // A batch never costs less than a smaller measured one (a timing that says so is noise).
  auto ratio = [&](int m) { return target_[m].ms / step; };
  double below = 1.0;  // the largest measured batch smaller than n (1: a step)
  int below_n = 1;
  for (int m = 2; m < std::min(n, kMaxTokens + 1); ++m)
    if (target_[m].n > 0) below = std::max(below, ratio(m)), below_n = m;
  if (n <= kMaxTokens && target_[n].n > 0) return std::max(below, ratio(n));
  // Not measured: the prior's slope from the batch below, but no more than a larger measured
  // batch costs.
  double cost = below + prior_.per_token * (n - below_n);
  for (int m = n + 1; m <= kMaxTokens; ++m)
    if (target_[m].n > 0) return std::min(cost, std::max(below, ratio(m)));
  return cost;
}

double SpeculationCosts::draft_step() const {
  const double step = step_ms();
  return step > 0 && draft_step_.n > 0 ? draft_step_.ms / step : draft_prior_.step;
}

double SpeculationCosts::draft_catch_up_per_token() const {
  const double step = step_ms();
  return step > 0 && draft_catch_up_.n > 0 ? draft_catch_up_.ms / step
                                           : draft_prior_.catch_up_per_token;
}

// ---- n-gram lookup ----

NgramProposal ngram_propose(std::span<const int32_t> context, int k, int ngram_min, int ngram_max) {
  NgramProposal out;
  const int size = static_cast<int>(context.size());
  if (k <= 0) return out;
  for (int n = std::min(ngram_max, size - 1); n >= std::max(1, ngram_min); --n) {
    const auto tail = context.subspan(size_t(size - n));
    // Occurrences must end before the last token, so that something follows them.
    for (int i = size - 1 - n; i >= 0; --i) {
      if (!std::equal(tail.begin(), tail.end(), context.begin() + i)) continue;
      const int from = i + n, len = std::min(k, size - from);
      out.tokens.assign(context.begin() + from, context.begin() + from + len);
      out.match_len = n;
      return out;
    }
  }
  return out;
}

// ---- rejection sampling ----

RejectionStep speculative_accept(std::span<const float> p, std::span<const float> q,
                                 int32_t drafted, Sampler& sampler, std::vector<float>& residual) {
  if (drafted < 0 || size_t(drafted) >= p.size() || (!q.empty() && q.size() != p.size()))
    throw std::invalid_argument("speculative_accept: the drafted token or q does not match p");
  const double pd = p[size_t(drafted)];
  const double qd = q.empty() ? 1.0 : q[size_t(drafted)];
  // u < p/q, written without the division; always true when p >= q.
  if (qd > 0 && sampler.uniform() * qd < pd) return {true, drafted};
  residual.resize(p.size());
  double mass = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const float qi = q.empty() ? (i == size_t(drafted) ? 1.0f : 0.0f) : q[i];
    residual[i] = std::max(0.0f, p[i] - qi);
    mass += residual[i];
  }
  // No residual mass means p == q up to rounding: a rejection then came from rounding, and p
  // itself is the right distribution to draw from.
  return {false, sampler.sample_from(mass > 0 ? std::span<const float>(residual) : p)};
}

// ---- the decoding loop ----

namespace {

class SpeculativeRun {
 public:
  SpeculativeRun(Generator& target, KvSequence& seq, std::span<const int32_t> prompt,
                 const GenerateOptions& options, const Speculation& spec)
      : target_(target),
        seq_(seq),
        prompt_(prompt),
        o_(options),
        spec_(spec),
        draft_(spec.draft),
        draft_cost_(target.draft_cost()),
        local_k_draft_(AdaptiveK::for_draft(target.verify_cost(), draft_cost_)),
        local_k_ngram_(AdaptiveK::for_ngram(target.verify_cost())),
        max_proposal_(max_proposal(target.verify_cost())),
        k_draft_(spec.k_draft ? spec.k_draft : &local_k_draft_),
        k_ngram_(spec.k_ngram ? spec.k_ngram : &local_k_ngram_),
        sampler_(options.sampling),
        draft_sampler_(draft_options(options.sampling)),
        stop_(options, target.stop_tokens(options)) {
    if (draft_) {
      if (!spec.draft_seq)
        throw std::invalid_argument("generate_speculative: a draft model needs a draft_seq");
      const int nt = target.model().config().n_vocab, nd = draft_->model().config().n_vocab;
      if (nt != nd)
        throw std::invalid_argument("generate_speculative: the draft model's vocabulary (" +
                                    std::to_string(nd) + " tokens) differs from the target's (" +
                                    std::to_string(nt) + ")");
    }
  }

  GenerateResult run() {
    if (!target_.prefill(seq_, prompt_, o_, r_)) return r_;
    context_.assign(prompt_.begin(), prompt_.end());
    const auto decode_start = Clock::now();
    r_.reason = StopReason::MaxTokens;
    if (o_.max_tokens > 0 && emit(target_.next_token(sampler_, 0)))
      while (round()) {
      }
    settle_target();
    r_.decode_ms = ms_since(decode_start);
    return r_;
  }

 private:
  enum class Source { None, Draft, Ngram };

  static SamplerOptions draft_options(SamplerOptions o) {
    o.seed ^= 0x9E3779B97F4A7C15ull;  // the draft's draws independent of the target's
    return o;
  }

  int n_emitted() const { return static_cast<int>(r_.tokens.size()); }

  // Appends a token by the plain loop's rules; false ends generation (r_.reason set).
  bool emit(int32_t token) {
    const size_t before = r_.tokens.size();
    const bool go = stop_.accept(token, r_);
    if (r_.tokens.size() > before) context_.push_back(token);
    return go;
  }

  bool may_forward() { return stop_.may_forward(r_); }

  // Runs a forward and does the accounting; false: cancelled inside it.
  bool forward(Generator& gen, KvSequence& seq, std::span<const int32_t> tokens, int n_logits,
               int& steps) {
    const int64_t before = gen.forward_calls();
    const auto start = Clock::now();
    // Greedy decoding compares tokens only: a device backend then hands over ids, not logits.
    const bool ok = gen.forward(seq, tokens, LogitsRequest::for_sampler(n_logits, o_.sampling),
                                o_.cancel);
    const int ran = static_cast<int>(gen.forward_calls() - before);
    if (ok && ran > 0 && spec_.costs) {
      const int n = static_cast<int>(tokens.size());
      if (&gen == &target_)
        spec_.costs->record_target(n, ms_since(start));
      else
        spec_.costs->record_draft(n, ms_since(start));
    }
    steps += ran;
    if (ran > 0 && is_set(o_.cancel)) r_.speculation.steps_after_cancel += ran;
    if (!ok) r_.reason = StopReason::Cancelled;
    return ok;
  }

  // The target KV the contract promises: the prompt and every emitted token but the last, or
  // all of them after a stop token (whose logits came from running the last one).
  void settle_target() {
    const int m = n_emitted();
    const int keep = static_cast<int>(prompt_.size()) +
                     std::max(0, r_.reason == StopReason::StopToken ? m : m - 1);
    if (seq_.n_tokens > keep) target_.pool().truncate(seq_, keep);
  }

  bool round() {
    if (!stop_.may_extend(seq_.n_tokens, target_.model().n_ctx(), r_)) return false;
    const int room = std::min({o_.max_tokens - n_emitted() - 1,
                               target_.model().n_ctx() - seq_.n_tokens - 1, max_proposal_});
    drafts_.clear();
    const int ctx_len = static_cast<int>(context_.size());
    // A plain step when the measured costs need one: every estimate below is in its units.
    const Source source = spec_.costs && spec_.costs->step_due() ? Source::None : choose(room);
    if (source == Source::Draft && !propose_with_draft(k_for_draft_)) {
      draft_->pool().truncate(*spec_.draft_seq, std::min(spec_.draft_seq->n_tokens, ctx_len));
      return false;
    }
    const int k = static_cast<int>(drafts_.size());

    if (!may_forward()) return false;
    batch_.assign(1, context_.back());
    batch_.insert(batch_.end(), drafts_.begin(), drafts_.end());
    if (!forward(target_, seq_, batch_, k + 1, r_.speculation.target_steps)) return false;

    int accepted = 0, drafted_emitted = 0;
    const bool go = verify_and_emit(source, accepted, drafted_emitted);

    if (source == Source::Draft) {
      r_.speculation.proposed_draft += k;
      r_.speculation.accepted_draft += accepted;
      k_draft_->record(k, accepted);
      // The draft ran d1..d(k-1): keep those that were emitted.
      const int keep = ctx_len + std::min(drafted_emitted, k - 1);
      if (spec_.draft_seq->n_tokens > keep) draft_->pool().truncate(*spec_.draft_seq, keep);
    } else if (source == Source::Ngram) {
      r_.speculation.proposed_ngram += k;
      r_.speculation.accepted_ngram += accepted;
      k_ngram_->record(k, accepted);
    }
    settle_target();
    return go;
  }

  // Picks this round's proposal; n-gram tokens go to drafts_ at once, a draft proposal's k to
  // k_for_draft_.
  Source choose(int room) {
    if (room <= 0) return Source::None;
    NgramProposal ngram;
    double v_ngram = 0;
    if (spec_.ngram) {
      ngram = ngram_propose(context_, room, spec_.ngram_min, spec_.ngram_max);
      if (!ngram.tokens.empty() && ngram.match_len >= std::max(1, spec_.ngram_min)) {
        // A match longer than the minimum is taken to fail proportionally less often, and so
        // to be worth a longer proposal.
        const double support = double(std::max(1, spec_.ngram_min)) / ngram.match_len;
        const double a = 1.0 - (1.0 - k_ngram_->acceptance()) * support;
        const SpeculationCosts* costs = spec_.costs;
        const int k = std::min(costs ? k_ngram_->best_k(a, *costs, false) : k_ngram_->best_k(a),
                               static_cast<int>(ngram.tokens.size()));
        ngram.tokens.resize(size_t(k));
        v_ngram = costs ? k_ngram_->tokens_per_cost(k, a, *costs, false)
                        : k_ngram_->tokens_per_cost(k, a);
      }
    }
    k_for_draft_ = 0;
    double v_draft = 0;
    int lag = 0;  // context the draft has not seen (prompt, or tokens of n-gram rounds)
    if (draft_) {
      const int ctx_len = static_cast<int>(context_.size());
      // What the draft has not seen is run first.
      lag = std::max(0, ctx_len - 1 - spec_.draft_seq->n_tokens);
      const double a = k_draft_->acceptance();
      const SpeculationCosts* costs = spec_.costs;
      const int k = !costs || k_draft_->rounds() == 0 ? k_draft_->k()
                                                       : k_draft_->best_k(a, *costs, true, lag);
      // The draft holds the context and d1..d(k-1) at the end of its proposal.
      k_for_draft_ = std::min({room, k, draft_->model().n_ctx() - ctx_len + 1});
      auto value = [&](int behind) {
        return AdaptiveK::expected_tokens(a, k_for_draft_) / draft_round_cost(k_for_draft_, behind);
      };
      if (k_for_draft_ >= 1) v_draft = value(lag);
      // The catch-up is paid once for the rest of the generation, not by this round alone: a
      // draft that pays once caught up runs when what it saves over the tokens still to come
      // (a share 1 - 1 / v of their steps) exceeds the catch-up.
      if (k_for_draft_ >= 1 && lag > 0 && v_draft < kMinTokensPerCost) {
        const double caught_up = value(0);
        const double catch_up = draft_catch_up(lag);
        const int to_come = std::min(o_.max_tokens - n_emitted(),
                                     target_.model().n_ctx() - seq_.n_tokens);
        if (caught_up >= kMinTokensPerCost && to_come * (1.0 - 1.0 / caught_up) > catch_up)
          v_draft = caught_up;
      }
    }
    const bool ngram_ok = v_ngram >= kMinTokensPerCost ||
                          (v_ngram > 0 && k_ngram_->skipped() >= kProbeAfterSkips);
    const bool draft_ok = v_draft >= kMinTokensPerCost ||
                          (k_for_draft_ >= 1 && k_draft_->skipped() >= draft_probe_after(lag));
    Source source = Source::None;
    if (ngram_ok && (!draft_ok || v_ngram >= v_draft))
      source = Source::Ngram;
    else if (draft_ok)
      source = Source::Draft;
    if (v_ngram > 0 && source != Source::Ngram) k_ngram_->skip();
    if (k_for_draft_ >= 1 && source != Source::Draft) k_draft_->skip();
    if (source == Source::Ngram) drafts_ = std::move(ngram.tokens);
    return source;
  }

  // A round of k draft proposals after catching the draft up on `lag` tokens, in target steps:
  // as measured, or by the target backend's priors until then.
  double draft_round_cost(int k, int lag) const {
    return spec_.costs ? spec_.costs->round_cost(k, true, lag)
                       : 1.0 + k_draft_->cost_per_token() * k + draft_catch_up(lag);
  }
  double draft_catch_up(int lag) const {
    return lag * (spec_.costs ? spec_.costs->draft_catch_up_per_token()
                              : draft_cost_.catch_up_per_token);
  }

  // Skipped rounds after which the draft is tried again though its estimate says it would not
  // pay: kProbeAfterSkips, or more when a probe is expected to lose more than that many rounds
  // can bear (its cost: the catch-up of `lag` tokens, the draft's steps, the verification;
  // against the tokens it is expected to emit), so that probes cost at most kDraftProbeShare of
  // the decoding.
  int draft_probe_after(int lag) const {
    const int k = k_for_draft_;
    const double loss =
        draft_round_cost(k, lag) - AdaptiveK::expected_tokens(k_draft_->acceptance(), k);
    const double rounds = std::max(0.0, loss) / kDraftProbeShare;
    return rounds < kProbeAfterSkips ? kProbeAfterSkips
                                     : static_cast<int>(std::min(rounds, 1e6));
  }

  // Catches the draft KV up with the context in one forward, then proposes k tokens (greedy, or
  // drawn from the draft's distribution when sampling). False: stopped by cancel or deadline.
  bool propose_with_draft(int k) {
    KvSequence& ds = *spec_.draft_seq;
    const int ctx_len = static_cast<int>(context_.size());
    if (ds.n_tokens >= ctx_len) draft_->pool().truncate(ds, ctx_len - 1);
    const bool sampling = !sampler_.greedy();
    if (sampling && q_.size() < size_t(k)) q_.resize(size_t(k));
    for (int i = 0; i < k; ++i) {
      if (!may_forward()) return false;
      const auto tokens = i == 0 ? std::span<const int32_t>(context_).subspan(size_t(ds.n_tokens))
                                 : std::span<const int32_t>(&drafts_.back(), 1);
      if (!forward(*draft_, ds, tokens, 1, r_.speculation.draft_steps)) return false;
      if (sampling) {
        draft_sampler_.distribution(draft_->logits(0), q_[size_t(i)]);
        drafts_.push_back(draft_sampler_.sample_from(q_[size_t(i)]));
      } else {
        drafts_.push_back(draft_->greedy_token(0));
      }
    }
    return true;
  }

  // Emits the accepted drafts and the target's own token from the verification logits.
  // `accepted` counts drafts the target accepted (for the statistics), `drafted_emitted` those
  // that were emitted (stop rules may cut the round short). False ends generation.
  bool verify_and_emit(Source source, int& accepted, int& drafted_emitted) {
    const int k = static_cast<int>(drafts_.size());
    if (sampler_.greedy()) {
      while (accepted < k && target_.greedy_token(accepted) == drafts_[size_t(accepted)])
        ++accepted;
      for (int i = 0; i < accepted; ++i) {
        if (!emit(drafts_[size_t(i)])) return false;
        ++drafted_emitted;
      }
      return emit(target_.greedy_token(accepted));
    }
    for (int i = 0; i < k; ++i) {
      sampler_.distribution(target_.logits(i), p_);
      const std::span<const float> q = source == Source::Draft
                                           ? std::span<const float>(q_[size_t(i)])
                                           : std::span<const float>{};
      const RejectionStep step = speculative_accept(p_, q, drafts_[size_t(i)], sampler_, residual_);
      if (!step.accepted) return emit(step.token);
      ++accepted;
      if (!emit(step.token)) return false;
      ++drafted_emitted;
    }
    sampler_.distribution(target_.logits(k), p_);
    return emit(sampler_.sample_from(p_));
  }

  Generator& target_;
  KvSequence& seq_;
  std::span<const int32_t> prompt_;
  const GenerateOptions& o_;
  const Speculation& spec_;
  Generator* draft_;
  DraftCost draft_cost_;  // the target's backend's, for the rounds without spec.costs
  AdaptiveK local_k_draft_;
  AdaptiveK local_k_ngram_;
  int max_proposal_;
  AdaptiveK* k_draft_;
  AdaptiveK* k_ngram_;
  Sampler sampler_;
  Sampler draft_sampler_;
  GenerationLimits stop_;
  GenerateResult r_;

  std::vector<int32_t> context_;  // prompt + emitted tokens
  std::vector<int32_t> drafts_;   // this round's proposal
  std::vector<int32_t> batch_;
  int k_for_draft_ = 0;
  std::vector<std::vector<float>> q_;  // the draft's distributions when sampling
  std::vector<float> p_, residual_;
};

}  // namespace

GenerateResult generate_speculative(Generator& target, KvSequence& seq,
                                    std::span<const int32_t> prompt, const GenerateOptions& options,
                                    const Speculation& spec) {
  return SpeculativeRun(target, seq, prompt, options, spec).run();
}

}  // namespace ghostline::engine
