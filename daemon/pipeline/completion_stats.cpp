#include "daemon/pipeline/completion_stats.h"

namespace ghostline::daemon {

nlohmann::json CompletionStats::to_json() const {
  nlohmann::json j = {
      {"backend", backend == Backend::Remote ? "remote" : "local"},
      {"decision", decision},
      {"decisionReason", decision_reason},
      {"language", language},
      {"syntax",
       {{"reparseMs", reparse_ms}, {"attachMs", attach_ms}}},  // the context stage: stagesMs
      {"otherFiles", other_files},
      {"otherFilesTokens", other_files_tokens},
      {"promptTokens", prompt_tokens},
      {"matchedTokens", matched_tokens},
      {"prefilledTokens", prefilled_tokens},
      {"generatedTokens", generated_tokens},
      {"fim", engine::fim_mode_name(fim)},
      {"truncated", truncated},
      {"segments", segments},
      {"segmentsTokenized", segments_tokenized},
      {"stop", engine::stop_reason_name(stop)},
      {"generatedText", generated_text},
      {"promptMs", stages.prompt},
      {"prefillMs", prefill_ms},
      {"decodeMs", decode_ms},
      {"totalMs", total_ms},
      {"stagesMs",
       {{"context", stages.context},
        {"prompt", stages.prompt},
        {"cacheMatch", stages.cache_match},
        {"generate", stages.generate},
        {"postProcess", stages.post_process}}},
      {"cache",
       {{"hitRate", cache.hit_rate},
        {"blocks", cache.blocks},
        {"evictedBlocks", cache.evicted_blocks},
        {"poolBlocksUsed", cache.pool_blocks_used},
        {"poolBlocksFree", cache.pool_blocks_free},
        {"poolBytesUsed", cache.pool_bytes_used}}},
  };
  if (!remote_skipped.empty()) j["remoteSkipped"] = remote_skipped;
  if (answered_empty) j["answeredEmpty"] = true;
  if (backend == Backend::Remote) {
    // The server's model time is its own: no cache, pool or speculation figures of ours.
    for (const char* local : {"matchedTokens", "prefilledTokens", "prefillMs", "decodeMs", "cache"})
      j.erase(local);
    if (remote) {
      j["api"] = remote->api;
      j["events"] = remote->events;
      j["textEvents"] = remote->text_events;
      j["firstByteMs"] = remote->first_byte_ms;
      j["reusedConnection"] = remote->reused_connection;
      j["connectRetries"] = remote->connect_retries;
      j["streamClosedEarly"] = remote->closed_early;
      j["cancelled"] = remote->cancelled;
    }
    return j;
  }
  const auto& sp = speculation;
  if (speculating) {
    j["draftTokens"] = sp.proposed_draft + sp.proposed_ngram;
    j["acceptedDraftTokens"] = sp.accepted_draft + sp.accepted_ngram;
    j["speculation"] = {{"targetSteps", sp.target_steps},
                        {"draftSteps", sp.draft_steps},
                        {"proposedDraft", sp.proposed_draft},
                        {"acceptedDraft", sp.accepted_draft},
                        {"proposedNgram", sp.proposed_ngram},
                        {"acceptedNgram", sp.accepted_ngram},
                        {"kDraft", k_draft},
                        {"kNgram", k_ngram}};
  } else {
    j["speculation"] = {{"targetSteps", sp.target_steps}};
  }
  if (prefill_bound)
    j["prefillBound"] = {{"budgetTokens", prefill_bound->budget_tokens},
                         {"droppedPromptTokens", prefill_bound->dropped_prompt_tokens}};
  return j;
}

}  // namespace ghostline::daemon
