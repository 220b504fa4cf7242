#include "daemon/pipeline/completion_service.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "base/clock.h"
#include "base/utf8.h"
#include "daemon/pipeline/completion_stats.h"
#include "daemon/pipeline/engine_backend.h"
#include "daemon/pipeline/model_slot.h"
#include "daemon/pipeline/prompt_assembler.h"
#include "daemon/pipeline/remote_completer.h"
#include "daemon/pipeline/syntax_context.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/fim.h"
#include "engine/speculative.h"
#include "engine/tokenizer/tokenizer.h"
#include "syntax/context_builder.h"
#include "syntax/post_process.h"

namespace ghostline::daemon {
namespace {

// Declares itself not ready: the server then answers with no items and tells the user why.
class NoModelCompleter : public lsp::Completer {
 public:
  explicit NoModelCompleter(std::string why) : why_(std::move(why)) {}
  lsp::CompletionResult complete(const lsp::CompletionRequest&, const lsp::CancelToken&) override {
    throw std::runtime_error(why_);
  }
  std::string describe() const override { return why_; }
  bool ready() const override { return false; }

 private:
  std::string why_;
};

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

// Times one stage into its field of StageTimes.
class StageTimer {
 public:
  explicit StageTimer(double& into) : into_(into), start_(Clock::now()) {}
  ~StageTimer() { into_ += ms_since(start_); }

 private:
  double& into_;
  Clock::time_point start_;
};

// The model behind the LSP server. Runs on the engine thread only. The KV of every prompt and
// completion goes into a radix prefix cache, so a keystroke prefills only the tokens after the
// longest cached prefix, also across documents that share context.
//
// complete() runs the stages of the pipeline in order, each timed in the request's stats:
//   1. context: what shape of completion the cursor asks for (syntax/)
//   2. prompt: the FIM prompt, its prefix bounded so that its uncached part prefills within
//      its share of the deadline
//   3. cache match: the longest cached prefix, locked and leased (target, and draft if used)
//   4. generate: prefill what is not cached, then decode (speculatively) under the stop rules
//   5. post-process: cut at the stop point, trim, drop what the suffix already has
class EngineCompleter : public SyntaxAwareCompleter {
 public:
  EngineCompleter(const EngineOptions& options, const std::string& path)
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
        "loaded {} ({} parameters, {} threads, {} prompts of the {} family, prefill {:.0f} tokens/s in "
        "chunks of {}) in {:.0f} ms",
        path, model.n_params(), threads, engine::fim_mode_name(prompts_->mode()), engine::fim_family_name(fim_.family),
        target_->prefill_tokens_per_ms() * 1000, target_->generator().options().chunk_tokens,
        ms_since(start));
  }

  std::string describe() const override {
    std::string d = path_ + " (" + engine::fim_mode_name(prompts_->mode()) + ")";
    if (draft_) d += ", draft " + options_.draft;
    return d;
  }

  std::string model_name() const override { return std::filesystem::path(path_).filename().string(); }

  lsp::CompletionResult complete(const lsp::CompletionRequest& request,
                                 const lsp::CancelToken& cancel) override {
    return complete_answering_early(request, cancel, nullptr);
  }

  lsp::CompletionResult complete_answering_early(const lsp::CompletionRequest& request,
                                                 const lsp::CancelToken& cancel,
                                                 const AnswerNow& answer_now) override {
    Request q(request, options_);
    CompletionStats& stats = q.stats;

    const syntax::CompletionContext context = [&] {
      StageTimer t(stats.stages.context);
      return build_context(request);
    }();
    const syntax::CompletionShape& shape = context.shape;
    stats.decision = syntax::decision_name(context.decision);
    stats.decision_reason = context.reason;
    stats.language = context.language;
    if (const auto* a = syntax_attachment(request)) {
      stats.reparse_ms = a->reparse_ms;
      stats.attach_ms = a->attach_ms;
    }
    if (context.decision == syntax::Decision::None) {
      // Nothing to complete here: no model time at all.
      lsp::CompletionResult result;
      result.replace_begin = result.replace_end = request.cursor;
      stats.total_ms = ms_since(q.start);
      result.stats = stats.to_json();
      spdlog::debug("no completion: {}", context.reason);
      return result;
    }
    {
      StageTimer t(stats.stages.prompt);
      build_prompt(q);
    }
    KvLease target_kv, draft_kv;
    const bool use_draft = options_.speculation != SpeculationMode::Off && draft_ &&
                           options_.speculation != SpeculationMode::Ngram;
    {
      StageTimer t(stats.stages.cache_match);
      target_kv = KvLease(*target_, q.match);
      if (use_draft) draft_kv = KvLease(*draft_, draft_->match(q.prompt.tokens, use_cache()));
    }
    engine::GenerateResult r;
    {
      StageTimer t(stats.stages.generate);
      r = generate(q, shape, cancel, answer_now, target_kv, use_draft ? &draft_kv : nullptr);
    }
    target_kv.keep(q.prompt.tokens, r.tokens, use_cache());
    if (use_draft) draft_kv.keep(q.prompt.tokens, r.tokens, use_cache());
    target_->update_prefill_rate(r);

    lsp::CompletionResult result;
    {
      StageTimer t(stats.stages.post_process);
      const bool cut_short = r.reason == engine::StopReason::Deadline ||
                             r.reason == engine::StopReason::MaxTokens ||
                             r.reason == engine::StopReason::ContextFull;
      stats.generated_text = visible_text(r.tokens);
      syntax::FinishedCompletion done = syntax::finish(shape, stats.generated_text, cut_short);
      result.insert_text = std::move(done.text);
      result.replace_begin = request.cursor;
      result.replace_end = request.cursor + done.replace_after;
    }
    record(q, r);
    result.steps_after_cancel = r.speculation.steps_after_cancel;
    stats.total_ms = ms_since(q.start);
    result.stats = stats.to_json();
    spdlog::info("completion: {}", result.stats.dump());
    return result;
  }

  // Prefill of an uncached prompt may use this share of the deadline; decoding gets the rest.
  static constexpr double kPrefillShare = 0.6;
  static constexpr int kMinPrefillTokens = 64;
  // Room kept in a sequence beyond prompt and completion (a verify batch may run past the end).
  static constexpr int kSequenceMargin = 8;
  // Work answered early may go on to this many times the deadline (at least a second).
  static constexpr int kKeepWorkingFactor = 8;

 private:
  // One request as it goes through the stages.
  struct Request {
    Request(const lsp::CompletionRequest& r, const EngineOptions& o)
        : request(r),
          start(Clock::now()),
          deadline_ms(r.deadline_ms > 0 ? r.deadline_ms : o.deadline_ms),
          max_tokens(r.max_tokens > 0 ? r.max_tokens : o.max_tokens) {}
    const lsp::CompletionRequest& request;
    Clock::time_point start;
    int deadline_ms, max_tokens;
    Prompt prompt;
    cache::PrefixCache::Match match;  // the target's cached prefix of prompt.tokens
    CompletionStats stats;
  };

  bool use_cache() const { return !options_.no_prefix_cache; }

  // Stage 1.
  syntax::CompletionContext build_context(const lsp::CompletionRequest& request) const {
    return SyntaxState::context_for(request, prompts_->mode() != engine::FimMode::PrefixOnly);
  }

  // The text of generated tokens, without control tokens. Tokens are bytes: a character may be
  // cut where generation stopped, and a model may generate bytes no character has; only well
  // formed UTF-8 is shown (and can go out as JSON).
  std::string visible_text(std::span<const int32_t> tokens) const {
    const auto& tokenizer = target_->model().tokenizer();
    std::vector<int32_t> visible;
    for (int32_t token : tokens)
      if (!tokenizer.is_control(token)) visible.push_back(token);
    return utf8_well_formed(tokenizer.decode_continuation(visible));
  }

  void load_draft(int threads) {
    if (!std::filesystem::exists(options_.draft))
      throw std::runtime_error("draft model file '" + options_.draft + "' does not exist");
    // The draft's KV is a fraction of the target's per token; a quarter of the budget holds
    // at least as many tokens.
    draft_ = std::make_unique<ModelSlot>(
        options_.draft, std::max<size_t>(16, size_t(options_.kv_mib) / 4) << 20, threads,
        engine_backend(options_.backend));
    const std::string why =
        vocabulary_difference(target_->model().tokenizer(), draft_->model().tokenizer());
    if (!why.empty())
      throw std::runtime_error("draft model '" + options_.draft + "' cannot draft for '" + path_ +
                               "': their vocabularies differ (" + why +
                               "); use a draft from the same model family");
    spdlog::info("draft {} ({} parameters)", options_.draft, draft_->model().n_params());
  }

  // Stage 2. A long uncached prompt would miss the deadline in prefill alone: keep the part of
  // the prefix that the measured prefill speed allows in its share of the budget. The KV pool
  // must hold the prompt and all that is generated: under a small --kv-mib the completion is
  // shortened to fit rather than failed when the pool runs out in the middle of it.
  void build_prompt(Request& q) {
    const auto& request = q.request;
    PromptLimits limits;
    int longest = target_->max_sequence_tokens();
    if (draft_) longest = std::min(longest, draft_->max_sequence_tokens());
    q.max_tokens = std::min(q.max_tokens, longest / 2);
    const int room = longest - q.max_tokens - kSequenceMargin;
    limits.max_prefix_tokens =
        std::min(limits.max_prefix_tokens, std::max(16, room - prompts_->max_suffix_tokens(limits)));
    const auto [other_files, repo] = SyntaxState::prompt_context(request);
    q.prompt = prompts_->build(request.text, request.cursor, limits, other_files, repo);
    q.match = target_->match(q.prompt.tokens, use_cache());

    const double prefill_budget_ms = q.deadline_ms * kPrefillShare - ms_since(q.start);
    const int budget_tokens = std::max(
        kMinPrefillTokens, static_cast<int>(prefill_budget_ms * target_->prefill_tokens_per_ms()));
    const int full_prompt_tokens = static_cast<int>(q.prompt.tokens.size());
    for (int tries = 0; tries < 3; ++tries) {
      const int uncached = static_cast<int>(q.prompt.tokens.size()) - q.match.tokens;
      if (uncached <= budget_tokens) break;
      const int keep_prefix =
          std::max(kMinPrefillTokens, q.prompt.prefix_tokens - (uncached - budget_tokens));
      if (keep_prefix >= q.prompt.prefix_tokens) break;
      limits.max_prefix_tokens = keep_prefix;
      q.prompt = prompts_->build(request.text, request.cursor, limits, other_files, repo);
      q.match = target_->match(q.prompt.tokens, use_cache());
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

  // Stage 4. Speculation: n-gram proposals always, the draft model's when there is one. The
  // draft's KV comes from its own radix tree; it catches up on the prompt only if it proposes.
  engine::GenerateResult generate(Request& q, const syntax::CompletionShape& shape,
                                  const lsp::CancelToken& cancel, const AnswerNow& answer_now,
                                  KvLease& target_kv, KvLease* draft_kv) {
    const auto& tokenizer = target_->model().tokenizer();
    syntax::StopRules stop_rules(shape);
    engine::GenerateOptions gen;
    gen.max_tokens = q.max_tokens;
    gen.stop_tokens = prompts_->fim().stop;
    gen.cancel = cancel.flag();
    gen.deadline = q.start + std::chrono::milliseconds(q.deadline_ms);
    gen.should_stop = [&](int32_t token) {
      const int32_t one[1] = {token};
      return stop_rules.append(tokenizer.decode_continuation(one));
    };
    if (answer_now) {
      // The reply is due at the deadline with what is ready; the work goes on a while longer
      // (the kept-work path: a keystroke that does not continue it stops it).
      gen.answer_by = gen.deadline;
      gen.deadline = q.start + std::chrono::milliseconds(std::max(q.deadline_ms * kKeepWorkingFactor, 1000));
      gen.on_answer_by = [&](std::span<const int32_t> tokens) {
        lsp::CompletionResult partial;
        partial.insert_text = syntax::finish_completion(shape, visible_text(tokens), /*cut_short=*/true);
        partial.replace_begin = partial.replace_end = q.request.cursor;
        partial.stats = {{"answeredEarly", true},
                         {"generatedTokens", tokens.size()},
                         {"totalMs", ms_since(q.start)}};
        answer_now(partial);
      };
    }
    if (options_.speculation == SpeculationMode::Off)
      return target_->generator().generate(target_kv.seq(), q.prompt.tokens, gen);
    SpeculationState& state = speculation_state(q.request);
    if (!costs_) costs_.emplace(target_->generator().verify_cost());
    const engine::Speculation spec{.draft = draft_kv ? &draft_->generator() : nullptr,
                                   .draft_seq = draft_kv ? &draft_kv->seq() : nullptr,
                                   .ngram = options_.speculation != SpeculationMode::Draft,
                                   .k_draft = &state.draft,
                                   .k_ngram = &state.ngram,
                                   .costs = &*costs_};
    auto r = engine::generate_speculative(target_->generator(), target_kv.seq(), q.prompt.tokens,
                                          gen, spec);
    q.stats.speculating = true;
    q.stats.k_draft = state.draft.k();
    q.stats.k_ngram = state.ngram.k();
    return r;
  }

  void record(Request& q, const engine::GenerateResult& r) const {
    CompletionStats& stats = q.stats;
    stats.fim = q.prompt.mode;
    stats.truncated = q.prompt.truncated;
    stats.segments = q.prompt.segments;
    stats.segments_tokenized = q.prompt.segments_tokenized;
    stats.other_files = q.prompt.other_files;
    stats.other_files_tokens = q.prompt.other_files_tokens;
    stats.prompt_tokens = r.prompt_tokens;
    stats.matched_tokens = r.reused_tokens;
    stats.prefilled_tokens = r.prefilled_tokens;
    stats.generated_tokens = static_cast<int>(r.tokens.size());
    stats.stop = r.reason;
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

  // Running acceptance of each proposal source, per document; a new document starts from the
  // latest state of its language.
  struct SpeculationState {
    engine::AdaptiveK draft, ngram;
  };
  SpeculationState& speculation_state(const lsp::CompletionRequest& request) {
    if (by_document_.size() > 512) by_document_.clear();
    const engine::VerifyCost cost = target_->generator().verify_cost();
    auto [it, added] = by_document_.try_emplace(
        request.uri,
        SpeculationState{engine::AdaptiveK::for_draft(cost), engine::AdaptiveK::for_ngram(cost)});
    if (added)
      if (auto lang = latest_by_language_.find(request.language_id);
          lang != latest_by_language_.end())
        if (auto latest = by_document_.find(lang->second); latest != by_document_.end())
          it->second = latest->second;
    latest_by_language_[request.language_id] = request.uri;
    return it->second;
  }

  EngineOptions options_;
  std::string path_;
  std::unique_ptr<ModelSlot> target_;
  std::unique_ptr<ModelSlot> draft_;
  std::unordered_map<std::string, SpeculationState> by_document_;
  // What a proposal costs on this machine, measured as the models run (shared by documents).
  std::optional<engine::SpeculationCosts> costs_;
  std::unordered_map<std::string, std::string> latest_by_language_;
  engine::FimTemplate fim_;
  std::unique_ptr<PromptAssembler> prompts_;
};

}  // namespace

std::string default_model_path() {
  constexpr const char* kFile = "ghostline-code.gguf";
  if (const char* env = std::getenv("GHOSTLINE_MODEL_DIR")) return (std::filesystem::path(env) / kFile).string();
  // An installed binary (cmake --install) has its models under PREFIX/share; one run from the
  // build tree has none there and takes the source tree's.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = (exe.parent_path() / GHOSTLINE_INSTALLED_MODEL_DIR / kFile).lexically_normal();
    if (std::filesystem::exists(installed, ec)) return installed.string();
  }
  return (std::filesystem::path(GHOSTLINE_DEFAULT_MODEL_DIR) / kFile).string();
}

// --backend remote: the model file gives the tokenizer (a vocabulary-only file is enough); when
// it has weights too, it answers while the server is unreachable.
static std::unique_ptr<lsp::Completer> make_remote_completer(const EngineOptions& options, const std::string& path) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error("--backend remote builds prompts with the model's tokenizer: '" + path +
                             "' does not exist; pass --model FILE (a vocabulary-only GGUF is enough)");
  std::unique_ptr<lsp::Completer> local;
  if (!engine::GgufFile::open(path)->tensors().empty()) {
    // The fallback computes here, on the best local backend.
    EngineOptions here = options;
    here.backend = BackendChoice::Auto;
    local = std::make_unique<EngineCompleter>(here, path);
  }
  return std::make_unique<RemoteCompleter>(options, path, std::move(local));
}

std::unique_ptr<lsp::Completer> make_completion_service(const EngineOptions& options) {
  std::string path = options.model.empty() ? default_model_path() : options.model;
  if (options.backend == BackendChoice::Remote) return make_remote_completer(options, path);
  if (!std::filesystem::exists(path)) {
    if (!options.model.empty())
      throw std::runtime_error("model file '" + path + "' does not exist");
    return std::make_unique<NoModelCompleter>("no model: the default model " + path +
                                              " is not there; pass --model FILE");
  }
  return std::make_unique<EngineCompleter>(options, path);
}

}  // namespace ghostline::daemon
