#include "daemon/pipeline/completion_pipeline.h"

#include <spdlog/spdlog.h>

#include "daemon/pipeline/syntax_context.h"

namespace ghostline::daemon {
namespace {

// Times one stage into its field of StageTimes.
class StageTimer {
 public:
  explicit StageTimer(double& into) : into_(into), start_(Clock::now()) {}
  ~StageTimer() { into_ += ms_since(start_); }

 private:
  double& into_;
  Clock::time_point start_;
};

// A result that shows nothing at the cursor, with the request's stats so far.
lsp::CompletionResult nothing_shown(PipelineRequest& q) {
  lsp::CompletionResult result;
  result.replace_begin = result.replace_end = q.request.cursor;
  q.stats.total_ms = ms_since(q.start);
  result.stats = q.stats.to_json();
  return result;
}

}  // namespace

syntax::CompletionContext context_stage(const lsp::CompletionRequest& request, bool sees_suffix) {
  return SyntaxState::context_for(request, sees_suffix);
}

lsp::CompletionResult post_process_stage(const PipelineRequest& q, const Generated& generated,
                                         const syntax::StopRules& rules) {
  lsp::CompletionResult result;
  const size_t cursor = q.request.cursor;
  result.replace_begin = result.replace_end = cursor;
  if (generated.stop == engine::StopReason::Cancelled && generated.text.empty()) return result;
  syntax::FinishedCompletion done =
      generated.through_rules
          ? syntax::finish(rules, generated.text, generated.cut_short())
          : syntax::finish(q.context.shape, generated.text, generated.cut_short());
  result.insert_text = std::move(done.text);
  if (!result.insert_text.empty()) result.replace_end = cursor + done.replace_after;
  return result;
}

lsp::CompletionResult run_pipeline(Generate& generate, PipelineRequest& q,
                                   const lsp::CancelToken& cancel,
                                   const lsp::Completer::AnswerEarly& answer_early) {
  CompletionStats& stats = q.stats;
  {
    StageTimer t(stats.stages.context);
    q.context = context_stage(q.request, generate.sees_suffix());
  }
  stats.decision = syntax::decision_name(q.context.decision);
  stats.decision_reason = q.context.reason;
  stats.language = q.context.language;
  if (const lsp::RequestContext* a = q.request.context.get()) {
    stats.reparse_ms = a->reparse_ms;
    stats.attach_ms = a->attach_ms;
  }
  if (q.context.decision == syntax::Decision::None) {
    // Nothing to complete here: no model time at all.
    spdlog::debug("no completion: {}", q.context.reason);
    return nothing_shown(q);
  }
  {
    // A prompt bounded by what is cached looks up the cache as it is built: that time is the
    // cache match stage's.
    const double matched_before = stats.stages.cache_match;
    {
      StageTimer t(stats.stages.prompt);
      generate.prompt(q);
    }
    stats.stages.prompt -= stats.stages.cache_match - matched_before;
  }
  stats.fim = q.prompt.mode;
  stats.truncated = q.prompt.truncated;
  stats.segments = q.prompt.segments;
  stats.segments_tokenized = q.prompt.segments_tokenized;
  stats.other_files = q.prompt.other_files;
  stats.other_files_tokens = q.prompt.other_files_tokens;
  stats.prompt_tokens = static_cast<int>(q.prompt.tokens.size());
  {
    StageTimer t(stats.stages.cache_match);
    generate.match(q);
  }
  if (q.request.context_only) {
    {
      StageTimer t(stats.stages.generate);
      generate.fill_context(q, cancel);
    }
    lsp::CompletionResult result = nothing_shown(q);
    result.stats["contextOnly"] = true;
    spdlog::debug("context filled: {} of {} prompt tokens computed", stats.prefilled_tokens,
                  stats.prompt_tokens);
    return result;
  }
  AnswerEarlyText answer_early_text;
  if (answer_early)
    answer_early_text = [&](std::string_view text, int tokens) {
      lsp::CompletionResult partial;
      partial.insert_text = syntax::finish_completion(q.context.shape, text, /*cut_short=*/true);
      partial.replace_begin = partial.replace_end = q.request.cursor;
      partial.stats = {
          {"answeredEarly", true}, {"generatedTokens", tokens}, {"totalMs", ms_since(q.start)}};
      answer_early(partial);
    };
  Generated generated;
  syntax::StopRules rules(q.context.shape);
  {
    StageTimer t(stats.stages.generate);
    generated = generate.generate(q, rules, cancel, answer_early_text);
  }
  stats.stop = generated.stop;
  stats.generated_text = generated.text;
  lsp::CompletionResult result;
  {
    StageTimer t(stats.stages.post_process);
    result = post_process_stage(q, generated, rules);
  }
  result.steps_after_cancel = generated.steps_after_cancel;
  stats.total_ms = ms_since(q.start);
  result.stats = stats.to_json();
  if (generated.stop != engine::StopReason::Cancelled)
    spdlog::info("completion: {}", result.stats.dump());
  return result;
}

}  // namespace ghostline::daemon
