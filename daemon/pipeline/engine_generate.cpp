#include "daemon/pipeline/engine_generate.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "base/utf8.h"
#include "daemon/pipeline/engine_backend.h"
#include "daemon/pipeline/syntax_context.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {
namespace {

// Why `draft` cannot propose tokens for `target`, or empty: the token ids must mean the same.
std::string vocabulary_difference(const engine::Tokenizer& target, const engine::Tokenizer& draft) {
  if (target.n_vocab() != draft.n_vocab())
    return "the target has " + std::to_string(target.n_vocab()) + " tokens, the draft " +
           std::to_string(draft.n_vocab());
  for (int32_t id = 0; id < target.n_vocab(); ++id)
    if (target.token_text(id) != draft.token_text(id))
      return "token " + std::to_string(id) + " is '" + std::string(target.token_text(id)) +
             "' in the target and '" + std::string(draft.token_text(id)) + "' in the draft";
  return {};
}

}  // namespace

EngineGenerate::EngineGenerate(const EngineOptions& options, const std::string& path)
    : options_(options), path_(path) {
  if (options.kv_mib < 1) throw std::runtime_error("--kv-mib must be at least 1");
  const auto start = Clock::now();
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  target_ = std::make_unique<ModelSlot>(path, static_cast<size_t>(options.kv_mib) << 20, threads,
                                        engine_backend(options.backend));
  const engine::Model& model = target_->model();
  fim_ = engine::fim_template(model);
  prompts_ = std::make_unique<PromptAssembler>(model.tokenizer(), fim_);
  if (options.speculation == SpeculationMode::Draft && options.draft.empty())
    throw std::runtime_error("--speculation draft needs a draft model (--draft FILE)");
  if (!options.draft.empty()) load_draft(threads);
  spdlog::info(
      "loaded {} ({} parameters, {} threads, {} prompts of the {} family, prefill {:.0f} tokens/s "
      "in chunks of {}) in {:.0f} ms",
      path, model.n_params(), threads, engine::fim_mode_name(prompts_->mode()),
      engine::fim_family_name(fim_.family), target_->prefill_tokens_per_ms() * 1000,
      target_->generator().options().chunk_tokens, ms_since(start));
}

EngineGenerate::~EngineGenerate() = default;

bool EngineGenerate::sees_suffix() const { return prompts_->mode() != engine::FimMode::PrefixOnly; }

std::string EngineGenerate::describe() const {
  std::string d = path_ + " (" + engine::fim_mode_name(prompts_->mode()) + ")";
  if (draft_) d += ", draft " + options_.draft;
  return d;
}

std::string EngineGenerate::model_name() const {
  return std::filesystem::path(path_).filename().string();
}

bool EngineGenerate::use_draft() const {
  return draft_ && options_.speculation != SpeculationMode::Off &&
         options_.speculation != SpeculationMode::Ngram;
}

void EngineGenerate::load_draft(int threads) {
  if (!std::filesystem::exists(options_.draft))
    throw std::runtime_error("draft model file '" + options_.draft + "' does not exist");
  // The draft's KV is a fraction of the target's per token; a quarter of the budget holds at
  // least as many tokens. The draft runs between the target's forwards, on its threads.
  draft_ = std::make_unique<ModelSlot>(options_.draft,
                                       std::max<size_t>(16, size_t(options_.kv_mib) / 4) << 20,
                                       threads, engine_backend(options_.backend), target_.get());
  const std::string why =
      vocabulary_difference(target_->model().tokenizer(), draft_->model().tokenizer());
  if (!why.empty())
    throw std::runtime_error("draft model '" + options_.draft + "' cannot draft for '" + path_ +
                             "': their vocabularies differ (" + why +
                             "); use a draft from the same model family");
  spdlog::info("draft {} ({} parameters)", options_.draft, draft_->model().n_params());
}

// A long uncached prompt would miss the deadline in prefill alone: keep the part of the prefix
// that the measured prefill speed allows in its share of the budget (not for a context_only
// request, which computes in idle time what that bound cut). The KV pool must hold the
// prompt and all that is generated: under a small --kv-mib the completion is shortened to fit
// rather than failed when the pool runs out in the middle of it.
void EngineGenerate::prompt(PipelineRequest& q) {
  const auto& request = q.request;
  PromptLimits limits;
  int longest = target_->max_sequence_tokens();
  if (draft_) longest = std::min(longest, draft_->max_sequence_tokens());
  q.max_tokens = std::min(q.max_tokens, longest / 2);
  const int room = longest - q.max_tokens - kSequenceMargin;
  limits.max_prefix_tokens =
      std::min(limits.max_prefix_tokens, std::max(16, room - prompts_->max_suffix_tokens(limits)));
  const auto [other_files, repo] = SyntaxState::prompt_context(request);
  auto match = [&] {
    const auto start = Clock::now();
    match_ = target_->match(q.prompt.tokens, use_cache());
    q.stats.stages.cache_match += ms_since(start);
  };
  q.prompt = prompts_->build(request.text, request.cursor, limits, other_files, repo);
  match();

  const double prefill_budget_ms = q.deadline_ms * kPrefillShare - ms_since(q.start);
  const int budget_tokens = std::max(
      kMinPrefillTokens, static_cast<int>(prefill_budget_ms * target_->prefill_tokens_per_ms()));
  const int full_prompt_tokens = static_cast<int>(q.prompt.tokens.size());
  for (int tries = 0; tries < 3 && !request.context_only; ++tries) {
    const int uncached = static_cast<int>(q.prompt.tokens.size()) - match_.tokens;
    if (uncached <= budget_tokens) break;
    const int keep_prefix =
        std::max(kMinPrefillTokens, q.prompt.prefix_tokens - (uncached - budget_tokens));
    if (keep_prefix >= q.prompt.prefix_tokens) break;
    limits.max_prefix_tokens = keep_prefix;
    q.prompt = prompts_->build(request.text, request.cursor, limits, other_files, repo);
    match();
    q.stats.prefill_bound = CompletionStats::PrefillBound{
        .budget_tokens = budget_tokens,
        .dropped_prompt_tokens = full_prompt_tokens - static_cast<int>(q.prompt.tokens.size())};
  }
  // The suffix and the template are not cut by the prefix limit: what they leave is the most
  // that may be generated.
  const int prompt_tokens = static_cast<int>(q.prompt.tokens.size());
  q.max_tokens = std::min(q.max_tokens, longest - prompt_tokens - kSequenceMargin);
  if (q.max_tokens < 1)
    throw std::runtime_error("the KV cache holds " + std::to_string(longest) +
                             " tokens, too few for a prompt of " + std::to_string(prompt_tokens) +
                             " tokens and its completion; raise --kv-mib");
}

// The target's cached prefix (found by the prompt stage), locked and leased, and the draft's
// from its own radix tree when it proposes.
void EngineGenerate::match(PipelineRequest& q) {
  target_kv_ = KvLease(*target_, match_);
  draft_kv_ =
      use_draft() ? KvLease(*draft_, draft_->match(q.prompt.tokens, use_cache())) : KvLease();
}

Generated EngineGenerate::generate(PipelineRequest& q, syntax::StopRules& rules,
                                   const lsp::CancelToken& cancel,
                                   const AnswerEarlyText& answer_early_text) {
  engine::GenerateResult r;
  std::string text;
  try {
    r = run(q, rules, cancel, answer_early_text, text);
  } catch (...) {
    target_kv_ = KvLease();  // unlocks the cached prefix; the sequence's new blocks go back
    draft_kv_ = KvLease();
    throw;
  }
  // The KV of prompt and completion goes into the radix trees, whatever stopped generation.
  target_kv_.keep(q.prompt.tokens, r.tokens, use_cache());
  if (use_draft()) draft_kv_.keep(q.prompt.tokens, r.tokens, use_cache());
  target_->update_prefill_rate(r);
  record(q, r);
  // Tokens are bytes: a character may be cut where generation stopped, and a model may generate
  // bytes no character has; only well formed UTF-8 is shown (and can go out as JSON).
  Generated generated;
  generated.text = utf8_well_formed(text);
  generated.through_rules = generated.text == text;
  generated.stop = r.reason;
  generated.steps_after_cancel = r.speculation.steps_after_cancel;
  return generated;
}

// The whole prompt into the caches (the draft's too, which would otherwise catch up on it when
// it next proposes), chunk by chunk: what a cancel leaves computed is kept as well.
void EngineGenerate::fill_context(PipelineRequest& q, const lsp::CancelToken& cancel) {
  engine::GenerateOptions options;
  options.cancel = cancel.flag();
  engine::GenerateResult r;
  try {
    target_->generator().prefill(target_kv_.seq(), q.prompt.tokens, options, r);
    target_kv_.keep(q.prompt.tokens, {}, use_cache());
    if (use_draft()) {  // (a cancel stops it before its first chunk)
      engine::GenerateResult d;
      draft_->generator().prefill(draft_kv_.seq(), q.prompt.tokens, options, d);
      draft_kv_.keep(q.prompt.tokens, {}, use_cache());
    }
  } catch (...) {
    target_kv_ = KvLease();
    draft_kv_ = KvLease();
    throw;
  }
  target_->update_prefill_rate(r);
  record(q, r);
}

// Speculation: n-gram proposals always, the draft model's when there is one. The draft's KV
// comes from its own radix tree; it catches up on the prompt only if it proposes.
engine::GenerateResult EngineGenerate::run(PipelineRequest& q, syntax::StopRules& rules,
                                           const lsp::CancelToken& cancel,
                                           const AnswerEarlyText& answer_early_text,
                                           std::string& text) {
  const auto& tokenizer = target_->model().tokenizer();
  engine::GenerateOptions gen;
  gen.max_tokens = q.max_tokens;
  gen.stop_tokens = prompts_->fim().stop;
  gen.cancel = cancel.flag();
  gen.deadline = q.start + std::chrono::milliseconds(q.deadline_ms);
  // Each token is decoded once, as it is accepted: its text goes to the completion and through
  // the stop rules (control tokens are never shown).
  gen.should_stop = [&](int32_t token) {
    if (tokenizer.is_control(token)) return rules.stopped();
    const int32_t one[1] = {token};
    const size_t before = text.size();
    text += tokenizer.decode_continuation(one);
    return rules.append(std::string_view(text).substr(before));
  };
  if (answer_early_text) {
    // The reply is due at the deadline with what is ready; the work goes on a while longer
    // (the kept-work path: a keystroke that does not continue it stops it).
    gen.answer_early_at = gen.deadline;
    gen.deadline = q.start + std::chrono::milliseconds(
                                 std::max(q.deadline_ms * kKeepWorkingFactor, 1000));
    gen.on_answer_early = [&](std::span<const int32_t> tokens) {
      answer_early_text(utf8_well_formed(text), static_cast<int>(tokens.size()));
    };
  }
  if (options_.speculation == SpeculationMode::Off)
    return target_->generator().generate(target_kv_.seq(), q.prompt.tokens, gen);
  SpeculationState& state = speculation_state(q.request);
  if (!costs_)
    costs_.emplace(target_->generator().verify_cost(), target_->generator().draft_cost());
  const bool draft = use_draft();
  const engine::Speculation spec{.draft = draft ? &draft_->generator() : nullptr,
                                 .draft_seq = draft ? &draft_kv_.seq() : nullptr,
                                 .ngram = options_.speculation != SpeculationMode::Draft,
                                 .k_draft = &state.draft,
                                 .k_ngram = &state.ngram,
                                 .costs = &*costs_};
  auto r = engine::generate_speculative(target_->generator(), target_kv_.seq(), q.prompt.tokens,
                                        gen, spec);
  latest_by_language_[q.request.language_id] = state;
  q.stats.speculating = true;
  q.stats.k_draft = state.draft.k();
  q.stats.k_ngram = state.ngram.k();
  return r;
}

void EngineGenerate::record(PipelineRequest& q, const engine::GenerateResult& r) const {
  CompletionStats& stats = q.stats;
  stats.matched_tokens = r.reused_tokens;
  stats.prefilled_tokens = r.prefilled_tokens;
  stats.generated_tokens = static_cast<int>(r.tokens.size());
  stats.prefill_ms = r.prefill_ms;
  stats.decode_ms = r.decode_ms;
  stats.speculation = r.speculation;
  const auto cs = target_->cache().stats();
  const auto ps = target_->pool().stats();
  stats.cache = {.hit_rate = cs.hit_rate(),
                 .blocks = cs.blocks,
                 .evicted_blocks = cs.evicted_blocks,
                 .pool_blocks_used = ps.blocks_used,
                 .pool_blocks_free = ps.blocks_free,
                 .pool_bytes_used = ps.bytes_used};
}

EngineGenerate::SpeculationState& EngineGenerate::speculation_state(
    const lsp::CompletionRequest& request) {
  {
    std::lock_guard lock(closed_mutex_);
    for (const lsp::DocumentKey& closed : closed_) by_document_.erase(closed);
    closed_.clear();
  }
  const lsp::DocumentKey& key = lsp::document_key_of(request);
  auto it = by_document_.find(key);
  if (it == by_document_.end()) {
    if (by_document_.size() >= kMaxDocuments)
      by_document_.erase(std::min_element(by_document_.begin(), by_document_.end(),
                                          [](const auto& a, const auto& b) {
                                            return a.second.used < b.second.used;
                                          }));
    const engine::VerifyCost cost = target_->generator().verify_cost();
    SpeculationState fresh{engine::AdaptiveK::for_draft(cost, target_->generator().draft_cost()),
                           engine::AdaptiveK::for_ngram(cost)};
    if (auto lang = latest_by_language_.find(request.language_id);
        lang != latest_by_language_.end())
      fresh = lang->second;
    it = by_document_.emplace(key, fresh).first;
  }
  it->second.used = ++clock_;
  return it->second;
}

void EngineGenerate::forget(const lsp::DocumentKey& key) {
  std::lock_guard lock(closed_mutex_);
  closed_.push_back(key);
}

}  // namespace ghostline::daemon
