#include "daemon/completion_service.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cache/prefix_cache.h"
#include "daemon/post_process.h"
#include "daemon/prompt.h"
#include "engine/generator.h"
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

// The model behind the LSP server. Runs on the engine thread only. The KV of every prompt and
// completion goes into a radix prefix cache, so a keystroke prefills only the tokens after the
// longest cached prefix, also across documents that share context.
class EngineCompleter : public lsp::Completer {
 public:
  EngineCompleter(const EngineOptions& options, const std::string& path)
      : options_(options), path_(path) {
    auto start = Clock::now();
    model_ = engine::Model::load(path);
    for (const auto& w : model_->warnings()) spdlog::warn("{}", w);
    const auto& cfg = model_->config();
    pool_ = std::make_unique<engine::KvBlockPool>(cfg.n_layer, cfg.n_head_kv * cfg.head_dim,
                                                  static_cast<size_t>(options.kv_mib) << 20);
    int threads = options.threads > 0 ? options.threads
                                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    generator_ = std::make_unique<engine::Generator>(*model_, *pool_, engine::GeneratorOptions{.threads = threads});
    // The tree may fill the pool but for the blocks one request needs at most.
    int request_blocks = (model_->n_ctx() + engine::KvBlockPool::kBlockTokens - 1) / engine::KvBlockPool::kBlockTokens + 1;
    size_t cache_blocks = static_cast<size_t>(std::max(1, pool_->capacity() - request_blocks));
    refs_ = std::make_unique<PoolRefcounts>(*pool_);
    cache_ = std::make_unique<cache::PrefixCache>(*refs_, engine::KvBlockPool::kBlockTokens, cache_blocks);
    pool_->set_reclaim_hook([this](int wanted) { return cache_->evict(static_cast<size_t>(wanted)) > 0; });
    FimTokens fim = fim_tokens(model_->tokenizer());
    // SPM prompts change only at their end while the user types, so every keystroke reuses
    // the cached suffix; use them whenever the model was trained on them.
    const auto& file = model_->file();
    FimMode mode = file.has("ghostline.fim.spm_template") ? FimMode::Spm : FimMode::Psm;
    prompts_ = std::make_unique<PromptAssembler>(model_->tokenizer(), std::move(fim), mode);
    mode_ = prompts_->mode();
    spdlog::info("loaded {} ({} parameters, {} threads, {} prompts) in {:.0f} ms", path,
                 model_->n_params(), threads, fim_mode_name(mode_), ms_since(start));
  }

  ~EngineCompleter() override { cache_.reset(); }

  std::string describe() const override {
    return path_ + " (" + fim_mode_name(mode_) + ")";
  }

  lsp::CompletionResult complete(const lsp::CompletionRequest& request,
                                 const lsp::CancelToken& cancel) override {
    auto start = Clock::now();
    int deadline_ms = request.deadline_ms > 0 ? request.deadline_ms : options_.deadline_ms;
    int max_tokens = request.max_tokens > 0 ? request.max_tokens : options_.max_tokens;
    const auto& tokenizer = model_->tokenizer();

    PromptLimits limits;
    int room = model_->n_ctx() - max_tokens - 8;
    limits.max_prefix_tokens = std::min(limits.max_prefix_tokens, std::max(16, room - limits.max_suffix_tokens));
    Prompt prompt = prompts_->build(request.text, request.cursor, limits);
    double prompt_ms = ms_since(start);

    // Start from the longest cached prefix; the last prompt token is always run again so that
    // its logits exist.
    auto match = options_.no_prefix_cache
                     ? cache::PrefixCache::Match{}
                     : cache_->match(std::span<const int32_t>(prompt.tokens).first(prompt.tokens.size() - 1));
    auto lock = cache_->lock(match);
    engine::KvSequence seq;
    for (cache::BlockId b : match.blocks) {
      pool_->retain(b);
      seq.blocks.push_back(b);
    }
    seq.n_tokens = match.tokens;

    CompletionShape shape = shape_at(request.text, request.cursor);
    engine::GenerateOptions gen;
    gen.max_tokens = max_tokens;
    gen.stop_tokens = prompts_->fim().stop;
    gen.cancel = cancel.flag();
    gen.deadline = start + std::chrono::milliseconds(deadline_ms);
    gen.should_stop = [&](std::span<const int32_t> tokens) {
      return should_stop(shape, tokenizer.decode_continuation(tokens));
    };
    engine::GenerateResult r;
    try {
      r = generator_->generate(seq, prompt.tokens, gen);
    } catch (...) {
      pool_->release(seq);
      throw;
    }
    // What the sequence holds is valid KV whatever stopped the request (even a cancel): keep it
    // for the next keystroke.
    std::vector<int32_t> computed = prompt.tokens;
    computed.insert(computed.end(), r.tokens.begin(), r.tokens.end());
    computed.resize(std::min<size_t>(computed.size(), seq.n_tokens));
    if (!options_.no_prefix_cache) cache_->insert(computed, seq.blocks);
    lock.reset();
    pool_->release(seq);

    lsp::CompletionResult result;
    std::vector<int32_t> visible;
    for (int32_t t : r.tokens)
      if (!tokenizer.is_control(t)) visible.push_back(t);
    result.insert_text = finish_completion(shape, tokenizer.decode_continuation(visible));
    result.replace_begin = result.replace_end = request.cursor;
    nlohmann::json stats = {
        {"promptTokens", r.prompt_tokens},     {"matchedTokens", r.reused_tokens},
        {"prefilledTokens", r.prefilled_tokens}, {"generatedTokens", r.tokens.size()},
        {"fim", fim_mode_name(prompt.mode)},   {"truncated", prompt.truncated},
        {"segments", prompt.segments},         {"segmentsTokenized", prompt.segments_tokenized},
        {"stop", engine::stop_reason_name(r.reason)},
        {"promptMs", prompt_ms},               {"prefillMs", r.prefill_ms},
        {"decodeMs", r.decode_ms},             {"totalMs", ms_since(start)},
    };
    auto cs = cache_->stats();
    auto ps = pool_->stats();
    stats["cache"] = {{"hitRate", cs.hit_rate()}, {"blocks", cs.blocks}, {"evictedBlocks", cs.evicted_blocks},
                      {"poolBlocksUsed", ps.blocks_used}, {"poolBlocksFree", ps.blocks_free},
                      {"poolBytesUsed", ps.bytes_used}};
    result.stats_json = stats.dump();
    spdlog::info("completion: {}", result.stats_json);
    return result;
  }

 private:
  EngineOptions options_;
  std::string path_;
  std::unique_ptr<engine::Model> model_;
  std::unique_ptr<engine::KvBlockPool> pool_;
  std::unique_ptr<engine::Generator> generator_;
  std::unique_ptr<PromptAssembler> prompts_;
  FimMode mode_ = FimMode::Psm;
  std::unique_ptr<PoolRefcounts> refs_;
  std::unique_ptr<cache::PrefixCache> cache_;
};

}  // namespace

void add_engine_options(ArgParser& p, EngineOptions& o) {
  p.option("-m,--model", "FILE", "GGUF model to complete with (default: " + default_model_path() + ")", &o.model);
  p.option("-t,--threads", "N", "compute threads (0: all cores)", &o.threads);
  p.option("--kv-mib", "MIB", "memory for the KV cache", &o.kv_mib);
  p.flag("--no-prefix-cache", "compute every prompt from scratch (to measure what the cache saves)",
         &o.no_prefix_cache);
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
