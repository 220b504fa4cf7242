// The pipeline's Generate stages on this machine's model: the FIM prompt bounded by the
// measured prefill speed and the KV pool, the radix prefix cache (a keystroke prefills only the
// tokens after the longest cached prefix, also across documents that share context), and
// decoding, speculative with n-gram lookup and a draft model when there is one. Engine thread
// only.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>
#include <string>
#include <unordered_map>

#include "daemon/pipeline/completion_pipeline.h"
#include "daemon/pipeline/engine_options.h"
#include "daemon/pipeline/model_slot.h"
#include "daemon/pipeline/prompt_assembler.h"
#include "engine/model/fim.h"
#include "engine/speculative.h"

namespace ghostline::daemon {

class EngineGenerate : public Generate {
 public:
  // Loads the model (and the draft); throws with the reason when they cannot be used.
  EngineGenerate(const EngineOptions& options, const std::string& path);
  ~EngineGenerate() override;

  bool sees_suffix() const override;
  void prompt(PipelineRequest& q) override;
  void match(PipelineRequest& q) override;
  Generated generate(PipelineRequest& q, syntax::StopRules& rules, const lsp::CancelToken& cancel,
                     const AnswerEarlyText& answer_early_text) override;
  void fill_context(PipelineRequest& q, const lsp::CancelToken& cancel) override;
  void forget(const lsp::DocumentKey& key) override;
  std::string describe() const override;
  std::string model_name() const override;

  // Documents whose speculation statistics are kept; beyond it the least recently used goes.
  static constexpr size_t kMaxDocuments = 512;
  // Prefill of an uncached prompt may use this share of the deadline; decoding gets the rest.
  static constexpr double kPrefillShare = 0.6;
  static constexpr int kMinPrefillTokens = 64;
  // Room kept in a sequence beyond prompt and completion (a verify batch may run past the end).
  static constexpr int kSequenceMargin = 8;
  // Work answered early may go on to this many times the deadline (at least a second).
  static constexpr int kKeepWorkingFactor = 8;

 private:
  // Running acceptance of each proposal source, per document; a new document starts from the
  // latest state of its language.
  struct SpeculationState {
    engine::AdaptiveK draft, ngram;
    uint64_t used = 0;  // when it was last used, for eviction
  };
  SpeculationState& speculation_state(const lsp::CompletionRequest& request);
  bool use_cache() const { return !options_.no_prefix_cache; }
  bool use_draft() const;
  void load_draft(int threads);
  // Generates, decoding each accepted token once into `text`.
  engine::GenerateResult run(PipelineRequest& q, syntax::StopRules& rules,
                             const lsp::CancelToken& cancel,
                             const AnswerEarlyText& answer_early_text, std::string& text);
  void record(PipelineRequest& q, const engine::GenerateResult& r) const;

  EngineOptions options_;
  std::string path_;
  std::unique_ptr<ModelSlot> target_;
  std::unique_ptr<ModelSlot> draft_;
  engine::FimTemplate fim_;
  std::unique_ptr<PromptAssembler> prompts_;
  // The request between the stages: the target's cached prefix of its prompt (prompt stage),
  // then the KV leases (cache match stage) that generation extends.
  cache::PrefixCache::Match match_;
  KvLease target_kv_, draft_kv_;
  std::unordered_map<lsp::DocumentKey, SpeculationState> by_document_;
  std::unordered_map<std::string, SpeculationState> latest_by_language_;
  uint64_t clock_ = 0;
  // Documents closed (I/O thread), whose statistics go at the next request (engine thread).
  std::mutex closed_mutex_;
  std::vector<lsp::DocumentKey> closed_;
  // What a proposal costs on this machine, measured as the models run (shared by documents).
  std::optional<engine::SpeculationCosts> costs_;
};

}  // namespace ghostline::daemon
