#include "engine/generation_limits.h"

#include <algorithm>

#include "base/clock.h"

namespace ghostline::engine {

GenerationLimits::GenerationLimits(const GenerateOptions& options, std::vector<int32_t> stop_tokens)
    : options_(options), stop_tokens_(std::move(stop_tokens)) {}

bool GenerationLimits::accept(int32_t token, GenerateResult& r) const {
  if (std::find(stop_tokens_.begin(), stop_tokens_.end(), token) != stop_tokens_.end()) {
    r.reason = StopReason::StopToken;
    return false;
  }
  r.tokens.push_back(token);
  if (options_.on_token) options_.on_token(token);
  if (options_.should_stop && options_.should_stop(token)) {
    r.reason = StopReason::Callback;
    return false;
  }
  if (static_cast<int>(r.tokens.size()) >= options_.max_tokens) {
    r.reason = StopReason::MaxTokens;
    return false;
  }
  if (is_set(options_.cancel)) {
    r.reason = StopReason::Cancelled;
    return false;
  }
  return true;
}

bool GenerationLimits::may_forward(GenerateResult& r) const {
  if (!answered_ && options_.answer_early_at && options_.on_answer_early &&
      Clock::now() >= *options_.answer_early_at) {
    answered_ = true;
    options_.on_answer_early(r.tokens);
  }
  if (is_set(options_.cancel)) {
    r.reason = StopReason::Cancelled;
    return false;
  }
  if (options_.deadline && Clock::now() >= *options_.deadline) {
    r.reason = StopReason::Deadline;
    return false;
  }
  return true;
}

bool GenerationLimits::may_extend(int seq_tokens, int n_ctx, GenerateResult& r) const {
  if (!may_forward(r)) return false;
  if (seq_tokens >= n_ctx) {
    r.reason = StopReason::ContextFull;
    return false;
  }
  return true;
}

}  // namespace ghostline::engine
