// What ends a generation in the engine: stop tokens, the caller's should_stop, the token limit,
// the cancel flag, the deadline and the context length (where the completion's text ends is
// syntax::StopRules', which reaches the engine as should_stop). The plain loop (generator.cpp)
// and the speculative one (speculative.cpp) both apply them through this class, so they stop at
// the same token for the same reason.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "engine/generator.h"

namespace ghostline::engine {

inline bool is_set(const std::atomic<bool>* flag) {
  return flag && flag->load(std::memory_order_relaxed);
}

class GenerationLimits {
 public:
  // `stop_tokens`: the options' stop tokens and the model's EOS/EOT (Generator::stop_tokens).
  GenerationLimits(const GenerateOptions& options, std::vector<int32_t> stop_tokens);

  // Emits one accepted token, in this order: a stop token ends generation without being
  // emitted (StopToken); otherwise it is appended to r.tokens and given to on_token, then
  // should_stop (Callback), the token limit (MaxTokens) and the cancel flag (Cancelled) may end
  // generation. False: generation ended, r.reason says why.
  bool accept(int32_t token, GenerateResult& r) const;
  // Before any forward call: the cancel flag (Cancelled), then the deadline (Deadline). Calls
  // on_answer_early once when answer_early_at has passed.
  bool may_forward(GenerateResult& r) const;
  // Before the forward that extends the target sequence: may_forward, then the context length
  // (ContextFull).
  bool may_extend(int seq_tokens, int n_ctx, GenerateResult& r) const;

 private:
  const GenerateOptions& options_;
  std::vector<int32_t> stop_tokens_;
  mutable bool answered_ = false;
};

}  // namespace ghostline::engine
