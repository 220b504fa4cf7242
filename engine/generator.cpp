#include "engine/generator.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "base/clock.h"
#include "engine/generation_limits.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {
const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::MaxTokens:
      return "max_tokens";
    case StopReason::StopToken:
      return "stop_token";
    case StopReason::Callback:
      return "stop_rule";
    case StopReason::Cancelled:
      return "cancelled";
    case StopReason::Deadline:
      return "deadline";
    case StopReason::ContextFull:
      return "context_full";
  }
  return "unknown";
}

Generator::Generator(const Model& model, KvBlockPool& pool, const GeneratorOptions& options)
    : model_(model), pool_(pool), options_(options) {
  const ModelConfig& c = model.config();
  if (pool.n_layer() != c.n_layer || pool.kv_dim() != c.kv_dim())
    throw std::invalid_argument("Generator: the KV block pool was made for another model shape (" +
                                std::to_string(pool.n_layer()) + " layers x " +
                                std::to_string(pool.kv_dim()) + " vs " + std::to_string(c.n_layer) +
                                " x " + std::to_string(c.kv_dim()) + ")");
  options_.chunk_tokens = std::max(1, options_.chunk_tokens);
  max_chunk_tokens_ = options_.chunk_tokens;
  options_.threads = std::max(1, options_.threads);
  const Generator* share = options_.share_threads_with;
  options_.share_threads_with = nullptr;  // not kept: only the constructor needs it
  backend_ = make_backend(model, pool,
                          {.kind = options_.backend,
                           .threads = options_.threads,
                           .max_batch_tokens = options_.chunk_tokens,
                           .cpu_threads = share ? share->backend_->cpu_threads() : nullptr});
}

bool Generator::shares_threads_with(const Generator& other) const {
  const auto mine = backend_->cpu_threads();
  return mine != nullptr && mine == other.backend_->cpu_threads();
}

Generator::~Generator() = default;

void Generator::set_chunk_tokens(int n) {
  options_.chunk_tokens = std::clamp(n, 1, max_chunk_tokens_);
}

std::span<const float> Generator::logits(int i) const {
  if (i < 0 || i >= n_logits_) throw std::out_of_range("Generator::logits: no such position");
  if (greedy_only_)
    throw std::logic_error("Generator::logits: the last forward wanted greedy tokens only");
  const size_t n_vocab = static_cast<size_t>(model_.config().n_vocab);
  return {logits_.data() + static_cast<size_t>(i) * n_vocab, n_vocab};
}

int32_t Generator::greedy_token(int i) const {
  if (i < 0 || i >= n_logits_)
    throw std::out_of_range("Generator::greedy_token: no such position");
  return greedy_only_ ? greedy_[size_t(i)] : argmax(logits(i));
}

int32_t Generator::next_token(Sampler& sampler, int i) const {
  return sampler.greedy() ? greedy_token(i) : sampler.sample(logits(i));
}

bool Generator::forward(KvSequence& seq, std::span<const int32_t> tokens, LogitsRequest request,
                        const std::atomic<bool>* cancel) {
  const ModelConfig& c = model_.config();
  const int n = static_cast<int>(tokens.size());
  n_logits_ = 0;
  if (request.last_n < 0 || request.last_n > n)
    throw std::invalid_argument("Generator::forward: logits requested for " +
                                std::to_string(request.last_n) + " of " + std::to_string(n) +
                                " tokens");
  if (static_cast<int64_t>(seq.n_tokens) + n > model_.n_ctx())
    throw std::invalid_argument("Generator::forward: " + std::to_string(seq.n_tokens + n) +
                                " tokens exceed the context length " +
                                std::to_string(model_.n_ctx()));
  for (int32_t t : tokens)
    if (t < 0 || t >= c.n_vocab)
      throw std::invalid_argument("Generator::forward: token id " + std::to_string(t) +
                                  " is outside the vocabulary of " + std::to_string(c.n_vocab));

  const size_t n_vocab = static_cast<size_t>(c.n_vocab);
  greedy_only_ = request.greedy_only;
  if (greedy_only_)
    greedy_.resize(static_cast<size_t>(request.last_n));
  else
    logits_.resize(static_cast<size_t>(request.last_n) * n_vocab);
  const int first_wanted = n - request.last_n;
  for (int s = 0; s < n; s += options_.chunk_tokens) {
    if (is_set(cancel)) return false;
    const int e = std::min(n, s + options_.chunk_tokens);
    const int wanted_from = std::max(s, first_wanted);
    const int n_wanted = std::max(0, e - wanted_from);
    pool_.prepare_append(seq, e - s);
    ForwardBatch batch{.tokens = tokens.subspan(size_t(s), size_t(e - s)),
                       .start_pos = seq.n_tokens,
                       .blocks = seq.blocks,
                       .n_logits = n_wanted,
                       .cancel = cancel};
    const size_t row = size_t(wanted_from - first_wanted);
    bool ok;
    if (greedy_only_) {
      ok = backend_->forward_greedy(
          batch, n_wanted > 0 ? std::span<int32_t>(greedy_).subspan(row, size_t(n_wanted))
                              : std::span<int32_t>{});
    } else {
      ok = backend_->forward(batch, n_wanted > 0 ? std::span<float>(logits_).subspan(
                                                       row * n_vocab, size_t(n_wanted) * n_vocab)
                                                 : std::span<float>{});
    }
    if (!ok) return false;
    seq.n_tokens += e - s;
  }
  if (n > 0) ++forward_calls_;
  n_logits_ = request.last_n;
  return true;
}

bool Generator::prefill(KvSequence& seq, std::span<const int32_t> prompt,
                        const GenerateOptions& options, GenerateResult& r) {
  if (prompt.empty()) throw std::invalid_argument("Generator::generate: empty prompt");
  r.prompt_tokens = static_cast<int>(prompt.size());
  // The last prompt token is always run: its logits give the first generated token.
  if (seq.n_tokens >= r.prompt_tokens) pool_.truncate(seq, r.prompt_tokens - 1);
  r.reused_tokens = seq.n_tokens;

  // Prefill chunk by chunk so that cancellation and the deadline are honoured between chunks.
  const auto prefill_start = Clock::now();
  const auto rest = prompt.subspan(size_t(seq.n_tokens));
  for (size_t s = 0; s < rest.size(); s += size_t(options_.chunk_tokens)) {
    const bool cancelled = is_set(options.cancel);
    if (cancelled || (options.deadline && Clock::now() >= *options.deadline)) {
      r.reason = cancelled ? StopReason::Cancelled : StopReason::Deadline;
      r.prefill_ms = ms_since(prefill_start);
      return false;
    }
    const size_t len = std::min(rest.size() - s, size_t(options_.chunk_tokens));
    const bool last_chunk = s + len == rest.size();
    const LogitsRequest request =
        last_chunk ? LogitsRequest::for_sampler(1, options.sampling) : LogitsRequest::none();
    if (!forward(seq, rest.subspan(s, len), request, options.cancel)) {
      r.reason = StopReason::Cancelled;
      r.prefill_ms = ms_since(prefill_start);
      return false;
    }
    r.prefilled_tokens += static_cast<int>(len);
  }
  r.prefill_ms = ms_since(prefill_start);
  return true;
}

std::vector<int32_t> Generator::stop_tokens(const GenerateOptions& options) const {
  std::vector<int32_t> stops = options.stop_tokens;
  const auto& specials = model_.tokenizer().specials();
  if (specials.eos) stops.push_back(*specials.eos);
  if (specials.eot) stops.push_back(*specials.eot);
  return stops;
}

GenerateResult Generator::generate(KvSequence& seq, std::span<const int32_t> prompt,
                                   const GenerateOptions& options) {
  GenerateResult r;
  if (!prefill(seq, prompt, options, r)) return r;
  const GenerationLimits stop(options, stop_tokens(options));
  Sampler sampler(options.sampling);
  const auto decode_start = Clock::now();
  r.reason = StopReason::MaxTokens;
  if (options.max_tokens > 0) {
    while (stop.accept(next_token(sampler, 0), r) &&
           stop.may_extend(seq.n_tokens, model_.n_ctx(), r)) {
      const int32_t step[1] = {r.tokens.back()};
      forward(seq, step, LogitsRequest::for_sampler(1, sampler.options()));
      ++r.speculation.target_steps;
      if (is_set(options.cancel)) ++r.speculation.steps_after_cancel;
    }
  }
  r.decode_ms = ms_since(decode_start);
  return r;
}

}  // namespace ghostline::engine
