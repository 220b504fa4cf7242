// The completion pipeline: the stages every completion goes through, whatever generates it.
//   1. context: what shape of completion the cursor asks for (syntax/)
//   2. prompt: the FIM prompt of the model (PromptAssembler), bounded by what generates it
//   3. cache match: the longest cached prefix of the prompt (the local engine; nothing remote)
//   4. generate: the local engine's prefill and decode, or a server's stream, under the stop
//      rules, which see each piece of text as it arrives
//   5. post-process: cut at the stop point, trim, drop what the suffix already has
// Stages 1 and 5 are the same for every backend and live here; 2-4 are the Generate seam,
// which the local engine (EngineGenerate) and an inference server's stream (RemoteGenerate)
// implement. Each stage is timed into the request's typed stats, which become JSON once, as
// the result leaves the pipeline.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "daemon/pipeline/completion_stats.h"
#include "daemon/pipeline/prompt_assembler.h"
#include "engine/generator.h"
#include "lsp/completer.h"
#include "syntax/context_builder.h"
#include "syntax/post_process.h"

namespace ghostline::daemon {

// One request as it goes through the stages.
struct PipelineRequest {
  // Limits not set by the request come from the defaults (the daemon's options).
  PipelineRequest(const lsp::CompletionRequest& r, int default_deadline_ms, int default_max_tokens)
      : request(r),
        start(Clock::now()),
        deadline_ms(r.deadline_ms > 0 ? r.deadline_ms : default_deadline_ms),
        max_tokens(r.max_tokens > 0 ? r.max_tokens : default_max_tokens) {}
  const lsp::CompletionRequest& request;
  Clock::time_point start;
  int deadline_ms, max_tokens;  // the generate stage may lower max_tokens to what fits
  syntax::CompletionContext context;
  Prompt prompt;
  CompletionStats stats;
};

// What the generate stage made, for the post-process stage.
struct Generated {
  std::string text;  // the visible text generated (well-formed UTF-8), before post-processing
  // Whether `text` is exactly what went through the stop rules, piece by piece: then their cut
  // is final; otherwise (the text had to be mended) the post-process stage finds it again.
  bool through_rules = false;
  engine::StopReason stop = engine::StopReason::MaxTokens;
  // Model steps that finished after the request was cancelled (work wasted on a stale request).
  int steps_after_cancel = 0;
  // Whether the text may end in the middle of what the model meant to write.
  bool cut_short() const {
    return stop == engine::StopReason::Deadline || stop == engine::StopReason::MaxTokens ||
           stop == engine::StopReason::ContextFull;
  }
};

// Called at most once during the generate stage with the text ready when the reply is due
// (`tokens`: how many tokens it came from); the work goes on after it.
using AnswerEarlyText = std::function<void(std::string_view text, int tokens)>;

// Stages 2-4: what turns the request into generated text.
class Generate {
 public:
  virtual ~Generate() = default;
  // Whether the model sees the text after the cursor (its prompts are fill-in-the-middle).
  virtual bool sees_suffix() const = 0;
  // Stage 2: q.prompt (and, for the local engine, q.max_tokens lowered to what fits). Time it
  // spends looking up the cache goes into q.stats.stages.cache_match.
  virtual void prompt(PipelineRequest& q) = 0;
  // Stage 3: the longest cached prefix of q.prompt, held for the generate stage.
  virtual void match(PipelineRequest&) {}
  // Stage 4: generates under `rules` (each piece of visible text goes to rules.append as it
  // arrives, and generation stops once it returns true), fills its part of q.stats. The text
  // is decoded once, as it arrives. `answer_early_text` may be empty: then the request is
  // answered when generation ends.
  virtual Generated generate(PipelineRequest& q, syntax::StopRules& rules,
                             const lsp::CancelToken& cancel,
                             const AnswerEarlyText& answer_early_text) = 0;
  // Idle work for a context_only request, after stages 2 and 3 (whose prompt then has no bound
  // from the deadline): computes q.prompt into the cache, with no deadline, stopping within a
  // step of a cancel, and generates nothing. Fills its part of q.stats.
  virtual void fill_context(PipelineRequest&, const lsp::CancelToken&) {}
  // Drops what it keeps of a document (it was closed). Called on the I/O thread: thread-safe.
  virtual void forget(const lsp::DocumentKey&) {}
  // A short description for logs and `ghostline/stats`, and the model's name.
  virtual std::string describe() const = 0;
  virtual std::string model_name() const = 0;
};

// Stage 1: the context of the cursor (the request's syntax tree when it has one).
syntax::CompletionContext context_stage(const lsp::CompletionRequest& request, bool sees_suffix);

// Stage 5: the text to show, from what was generated under `rules`.
lsp::CompletionResult post_process_stage(const PipelineRequest& q, const Generated& generated,
                                         const syntax::StopRules& rules);

// Runs the stages in order, each timed into q.stats, and returns the result with its stats.
// A cursor where nothing is to be completed takes no model time. `answer_early` may be empty.
// A context_only request runs stages 1-3 and Generate::fill_context, and shows nothing.
lsp::CompletionResult run_pipeline(Generate& generate, PipelineRequest& q,
                                   const lsp::CancelToken& cancel,
                                   const lsp::Completer::AnswerEarly& answer_early);

}  // namespace ghostline::daemon
