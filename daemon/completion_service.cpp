#include "daemon/completion_service.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <unordered_map>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cache/prefix_cache.h"
#include "daemon/post_process.h"
#include "daemon/prompt.h"
#include "engine/generator.h"
#include "engine/speculative.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

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

// The prefix cache holds its block references through the engine's pool.
class PoolRefcounts : public cache::BlockRefcounts {
 public:
  explicit PoolRefcounts(engine::KvBlockPool& pool) : pool_(pool) {}
  void retain(cache::BlockId id) override { pool_.retain(id); }
  void release(cache::BlockId id) override { pool_.release(id); }

 private:
  engine::KvBlockPool& pool_;
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

// One model with its own KV pool, generator and radix tree (the target and the draft each have
// one). Runs on the engine thread only.
struct ModelSlot {
  std::unique_ptr<engine::Model> model;
  std::unique_ptr<engine::KvBlockPool> pool;
  std::unique_ptr<engine::Generator> generator;
  std::unique_ptr<PoolRefcounts> refs;
  std::unique_ptr<cache::PrefixCache> cache;
  double prefill_tokens_per_ms = 0;  // running estimate, to bound prefill by the deadline

  ModelSlot(const std::string& path, size_t kv_bytes, int threads) {
    model = engine::Model::load(path);
    for (const auto& w : model->warnings()) spdlog::warn("{}", w);
    const auto& cfg = model->config();
    pool = std::make_unique<engine::KvBlockPool>(cfg.n_layer, cfg.n_head_kv * cfg.head_dim, kv_bytes);
    generator = std::make_unique<engine::Generator>(
        *model, *pool, engine::GeneratorOptions{.threads = threads, .chunk_tokens = kMaxChunk});
    // Measure prefill speed once, then size prefill chunks so that one costs a few
    // milliseconds: cancellation and the deadline are checked between chunks.
    prefill_tokens_per_ms = measure_prefill();
    generator->set_chunk_tokens(std::clamp(static_cast<int>(prefill_tokens_per_ms * kChunkMs), 8, kMaxChunk));
    // The tree may fill the pool but for the blocks one request needs at most.
    int request_blocks = (model->n_ctx() + engine::KvBlockPool::kBlockTokens - 1) / engine::KvBlockPool::kBlockTokens + 1;
    size_t cache_blocks = static_cast<size_t>(std::max(1, pool->capacity() - request_blocks));
    refs = std::make_unique<PoolRefcounts>(*pool);
    cache = std::make_unique<cache::PrefixCache>(*refs, engine::KvBlockPool::kBlockTokens, cache_blocks);
    pool->set_reclaim_hook([this](int wanted) { return cache->evict(static_cast<size_t>(wanted)) > 0; });
  }
  ~ModelSlot() { cache.reset(); }

  static constexpr double kChunkMs = 5.0;
  static constexpr int kMaxChunk = 64;

  // Tokens per millisecond of one prefill chunk of kMaxChunk tokens (which also pages the
  // weights in).
  double measure_prefill() {
    const int n = std::min(kMaxChunk, model->n_ctx() / 2);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ids[size_t(i)] = (i * 97 + 7) % model->config().n_vocab;
    engine::KvSequence seq;
    auto start = Clock::now();
    generator->forward(seq, ids, engine::LogitsRequest::last());
    double ms = std::max(0.01, ms_since(start));
    pool->release(seq);
    return n / ms;
  }

  void update_prefill_rate(const engine::GenerateResult& r) {
    if (r.prefilled_tokens < 16 || r.prefill_ms <= 0) return;
    prefill_tokens_per_ms = 0.7 * prefill_tokens_per_ms + 0.3 * (r.prefilled_tokens / r.prefill_ms);
  }

  // A sequence holding its own references to the matched blocks.
  engine::KvSequence take(const cache::PrefixCache::Match& match) {
    engine::KvSequence seq;
    for (cache::BlockId b : match.blocks) {
      pool->retain(b);
      seq.blocks.push_back(b);
    }
    seq.n_tokens = match.tokens;
    return seq;
  }
  // The longest cached prefix of the prompt but its last token (whose logits are needed).
  cache::PrefixCache::Match match(std::span<const int32_t> prompt, bool use_cache) {
    return use_cache ? cache->match(prompt.first(prompt.size() - 1)) : cache::PrefixCache::Match{};
  }
  // Gives the sequence's KV to the tree (what it holds is valid whatever stopped the request,
  // even a cancel: the next keystroke starts from it) and releases the sequence.
  void keep(std::span<const int32_t> prompt, std::span<const int32_t> generated, engine::KvSequence& seq,
            bool use_cache) {
    std::vector<int32_t> computed(prompt.begin(), prompt.end());
    computed.insert(computed.end(), generated.begin(), generated.end());
    computed.resize(std::min<size_t>(computed.size(), size_t(seq.n_tokens)));
    if (use_cache) cache->insert(computed, seq.blocks);
    pool->release(seq);
  }
};

// The model behind the LSP server. Runs on the engine thread only. The KV of every prompt and
// completion goes into a radix prefix cache, so a keystroke prefills only the tokens after the
// longest cached prefix, also across documents that share context.
class EngineCompleter : public lsp::Completer {
 public:
  EngineCompleter(const EngineOptions& options, const std::string& path)
      : options_(options), path_(path) {
    auto start = Clock::now();
    int threads = options.threads > 0 ? options.threads
                                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    target_ = std::make_unique<ModelSlot>(path, static_cast<size_t>(options.kv_mib) << 20, threads);
    const engine::Model& model = *target_->model;
    FimTokens fim = fim_tokens(model.tokenizer());
    // SPM prompts change only at their end while the user types, so every keystroke reuses
    // the cached suffix; use them whenever the model was trained on them.
    FimMode mode = model.file().has("ghostline.fim.spm_template") ? FimMode::Spm : FimMode::Psm;
    prompts_ = std::make_unique<PromptAssembler>(model.tokenizer(), std::move(fim), mode);
    mode_ = prompts_->mode();
    const auto& modes = {"auto", "ngram", "draft", "off"};
    if (std::find(modes.begin(), modes.end(), options.speculation) == modes.end())
      throw std::runtime_error("--speculation must be auto, ngram, draft or off, not '" + options.speculation + "'");
    if (options.speculation == "draft" && options.draft.empty())
      throw std::runtime_error("--speculation draft needs a draft model (--draft FILE)");
    if (!options.draft.empty()) {
      if (!std::filesystem::exists(options.draft))
        throw std::runtime_error("draft model file '" + options.draft + "' does not exist");
      // The draft's KV is a fraction of the target's per token; a quarter of the budget holds
      // at least as many tokens.
      draft_ = std::make_unique<ModelSlot>(options.draft, std::max<size_t>(16, size_t(options.kv_mib) / 4) << 20, threads);
      std::string why = vocabulary_difference(model.tokenizer(), draft_->model->tokenizer());
      if (!why.empty())
        throw std::runtime_error("draft model '" + options.draft + "' cannot draft for '" + path +
                                 "': their vocabularies differ (" + why +
                                 "); use a draft from the same model family");
      spdlog::info("draft {} ({} parameters)", options.draft, draft_->model->n_params());
    }
    spdlog::info("loaded {} ({} parameters, {} threads, {} prompts, prefill {:.0f} tokens/s in chunks of {}) in {:.0f} ms",
                 path, model.n_params(), threads, fim_mode_name(mode_), target_->prefill_tokens_per_ms * 1000,
                 target_->generator->options().chunk_tokens, ms_since(start));
  }


  std::string describe() const override {
    std::string d = path_ + " (" + fim_mode_name(mode_) + ")";
    if (draft_) d += ", draft " + options_.draft;
    return d;
  }

  lsp::CompletionResult complete(const lsp::CompletionRequest& request,
                                 const lsp::CancelToken& cancel) override {
    auto start = Clock::now();
    int deadline_ms = request.deadline_ms > 0 ? request.deadline_ms : options_.deadline_ms;
    int max_tokens = request.max_tokens > 0 ? request.max_tokens : options_.max_tokens;
    ModelSlot& target = *target_;
    const auto& tokenizer = target.model->tokenizer();
    const bool use_cache = !options_.no_prefix_cache;

    PromptLimits limits;
    int room = target.model->n_ctx() - max_tokens - 8;
    limits.max_prefix_tokens = std::min(limits.max_prefix_tokens, std::max(16, room - limits.max_suffix_tokens));
    Prompt prompt = prompts_->build(request.text, request.cursor, limits);
    auto match = target.match(prompt.tokens, use_cache);

    // A long uncached prompt would miss the deadline in prefill alone: keep the part of the
    // prefix that the measured prefill speed allows in its share of the budget.
    const double prefill_budget_ms = deadline_ms * kPrefillShare - ms_since(start);
    const int budget_tokens = std::max(kMinPrefillTokens, static_cast<int>(prefill_budget_ms * target.prefill_tokens_per_ms));
    const int full_prompt_tokens = static_cast<int>(prompt.tokens.size());
    bool prefill_bounded = false;
    for (int tries = 0; tries < 3; ++tries) {
      const int uncached = static_cast<int>(prompt.tokens.size()) - match.tokens;
      if (uncached <= budget_tokens) break;
      const int keep_prefix = std::max(kMinPrefillTokens, prompt.prefix_tokens - (uncached - budget_tokens));
      if (keep_prefix >= prompt.prefix_tokens) break;
      limits.max_prefix_tokens = keep_prefix;
      prompt = prompts_->build(request.text, request.cursor, limits);
      match = target.match(prompt.tokens, use_cache);
      prefill_bounded = true;
    }
    double prompt_ms = ms_since(start);

    // Start from the longest cached prefix; the last prompt token is always run again so that
    // its logits exist.
    auto lock = target.cache->lock(match);
    engine::KvSequence seq = target.take(match);

    CompletionShape shape = shape_at(request.text, request.cursor);
    engine::GenerateOptions gen;
    gen.max_tokens = max_tokens;
    gen.stop_tokens = prompts_->fim().stop;
    gen.cancel = cancel.flag();
    gen.deadline = start + std::chrono::milliseconds(deadline_ms);
    gen.should_stop = [&](std::span<const int32_t> tokens) {
      return should_stop(shape, tokenizer.decode_continuation(tokens));
    };
    // Speculation: n-gram proposals always, the draft model's when there is one. The draft's
    // KV comes from its own radix tree; it catches up on the prompt only if it proposes.
    const bool speculate = options_.speculation != "off";
    const bool use_draft = speculate && draft_ && options_.speculation != "ngram";
    engine::KvSequence draft_seq;
    cache::PrefixCache::Lock draft_lock;
    if (use_draft) {
      auto draft_match = draft_->match(prompt.tokens, use_cache);
      draft_lock = draft_->cache->lock(draft_match);
      draft_seq = draft_->take(draft_match);
    }
    SpeculationState& spec_state = speculation_state(request);
    engine::Speculation spec{.draft = use_draft ? draft_->generator.get() : nullptr,
                             .draft_seq = use_draft ? &draft_seq : nullptr,
                             .ngram = options_.speculation != "draft",
                             .k_draft = &spec_state.draft,
                             .k_ngram = &spec_state.ngram};
    engine::GenerateResult r;
    try {
      r = speculate ? engine::generate_speculative(*target.generator, seq, prompt.tokens, gen, spec)
                    : target.generator->generate(seq, prompt.tokens, gen);
    } catch (...) {
      target.pool->release(seq);
      if (draft_) draft_->pool->release(draft_seq);
      throw;
    }
    target.keep(prompt.tokens, r.tokens, seq, use_cache);
    lock.reset();
    if (use_draft) draft_->keep(prompt.tokens, r.tokens, draft_seq, use_cache);
    draft_lock.reset();
    target.update_prefill_rate(r);

    lsp::CompletionResult result;
    std::vector<int32_t> visible;
    for (int32_t t : r.tokens)
      if (!tokenizer.is_control(t)) visible.push_back(t);
    const bool cut_short = r.reason == engine::StopReason::Deadline || r.reason == engine::StopReason::MaxTokens ||
                           r.reason == engine::StopReason::ContextFull;
    result.insert_text = finish_completion(shape, tokenizer.decode_continuation(visible), cut_short);
    result.replace_begin = result.replace_end = request.cursor;
    nlohmann::json stats = {
        {"promptTokens", r.prompt_tokens},     {"matchedTokens", r.reused_tokens},
        {"prefilledTokens", r.prefilled_tokens}, {"generatedTokens", r.tokens.size()},
        {"fim", fim_mode_name(prompt.mode)},   {"truncated", prompt.truncated},
        {"segments", prompt.segments},         {"segmentsTokenized", prompt.segments_tokenized},
        {"stop", engine::stop_reason_name(r.reason)},
        {"generatedText", tokenizer.decode_continuation(visible)},
        {"promptMs", prompt_ms},               {"prefillMs", r.prefill_ms},
        {"decodeMs", r.decode_ms},             {"totalMs", ms_since(start)},
    };
    const auto& sp = r.speculation;
    if (speculate) {
      stats["draftTokens"] = sp.proposed_draft + sp.proposed_ngram;
      stats["acceptedDraftTokens"] = sp.accepted_draft + sp.accepted_ngram;
      stats["speculation"] = {{"targetSteps", sp.target_steps},     {"draftSteps", sp.draft_steps},
                              {"proposedDraft", sp.proposed_draft}, {"acceptedDraft", sp.accepted_draft},
                              {"proposedNgram", sp.proposed_ngram}, {"acceptedNgram", sp.accepted_ngram},
                              {"kDraft", spec_state.draft.k()},     {"kNgram", spec_state.ngram.k()}};
    } else {
      stats["speculation"] = {{"targetSteps", sp.target_steps}};
    }
    result.steps_after_cancel = sp.steps_after_cancel;
    if (prefill_bounded)
      stats["prefillBound"] = {{"budgetTokens", budget_tokens},
                               {"droppedPromptTokens", full_prompt_tokens - static_cast<int>(prompt.tokens.size())}};
    auto cs = target.cache->stats();
    auto ps = target.pool->stats();
    stats["cache"] = {{"hitRate", cs.hit_rate()}, {"blocks", cs.blocks}, {"evictedBlocks", cs.evicted_blocks},
                      {"poolBlocksUsed", ps.blocks_used}, {"poolBlocksFree", ps.blocks_free},
                      {"poolBytesUsed", ps.bytes_used}};
    result.stats_json = stats.dump();
    spdlog::info("completion: {}", result.stats_json);
    return result;
  }

  // Prefill of an uncached prompt may use this share of the deadline; decoding gets the rest.
  static constexpr double kPrefillShare = 0.6;
  static constexpr int kMinPrefillTokens = 64;

 private:
  // Running acceptance of each proposal source, per document; a new document starts from the
  // latest state of its language.
  struct SpeculationState {
    engine::AdaptiveK draft = engine::AdaptiveK::for_draft();
    engine::AdaptiveK ngram = engine::AdaptiveK::for_ngram();
  };
  SpeculationState& speculation_state(const lsp::CompletionRequest& request) {
    if (by_document_.size() > 512) by_document_.clear();
    auto [it, added] = by_document_.try_emplace(request.uri);
    if (added)
      if (auto lang = latest_by_language_.find(request.language_id); lang != latest_by_language_.end())
        it->second = by_document_.count(lang->second) ? by_document_[lang->second] : SpeculationState{};
    latest_by_language_[request.language_id] = request.uri;
    return it->second;
  }

  EngineOptions options_;
  std::string path_;
  std::unique_ptr<ModelSlot> target_;
  std::unique_ptr<ModelSlot> draft_;
  std::unordered_map<std::string, SpeculationState> by_document_;
  std::unordered_map<std::string, std::string> latest_by_language_;
  std::unique_ptr<PromptAssembler> prompts_;
  FimMode mode_ = FimMode::Psm;
};

}  // namespace

void add_engine_options(ArgParser& p, EngineOptions& o) {
  p.option("-m,--model", "FILE", "GGUF model to complete with (default: " + default_model_path() + ")", &o.model);
  p.option("-t,--threads", "N", "compute threads (0: all cores)", &o.threads);
  p.option("--kv-mib", "MIB", "memory for the KV cache", &o.kv_mib);
  p.flag("--no-prefix-cache", "compute every prompt from scratch (to measure what the cache saves)",
         &o.no_prefix_cache);
  p.option("--draft", "FILE",
           "draft model for speculative decoding (same vocabulary as the model; n-gram drafts are always used)",
           &o.draft);
  p.option("--speculation", "MODE",
           "auto (n-gram lookup, plus the draft model when given), ngram, draft, or off (to measure what "
           "speculation saves)",
           &o.speculation);
}

std::string default_model_path() {
  std::filesystem::path dir = GHOSTLINE_DEFAULT_MODEL_DIR;
  if (const char* env = std::getenv("GHOSTLINE_MODEL_DIR")) dir = env;
  return (dir / "ghostline-code.gguf").string();
}

std::unique_ptr<lsp::Completer> make_completion_service(const EngineOptions& options) {
  std::string path = options.model.empty() ? default_model_path() : options.model;
  if (!std::filesystem::exists(path)) {
    if (!options.model.empty()) throw std::runtime_error("model file '" + path + "' does not exist");
    return std::make_unique<NoModelCompleter>("no model: the default model " + path +
                                              " is not there; pass --model FILE");
  }
  return std::make_unique<EngineCompleter>(options, path);
}

}  // namespace ghostline::daemon
