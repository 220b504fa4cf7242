// What one completion did, stage by stage: filled by the pipeline as it runs, serialized once
// (to_json) for the log, `ghostline/stats` and the replay report.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/generator.h"
#include "engine/model/fim.h"

namespace ghostline::daemon {

// Milliseconds spent in each stage of the pipeline.
struct StageTimes {
  double context = 0;       // where the cursor is, what shape of completion to make
  double prompt = 0;        // FIM prompt, bounded so that its prefill fits the deadline
  double cache_match = 0;   // longest cached prefix, locked, for the target (and the draft)
  double generate = 0;      // prefill and decode
  double post_process = 0;  // cut, trim and clean the text to show
};

struct CompletionStats {
  // Where the text came from: this machine's model or an inference server.
  enum class Backend { Local, Remote };
  Backend backend = Backend::Local;
  // Set when a remote request was answered without the server (by the local model, or with no
  // completion when there is none): why the server was skipped.
  std::string remote_skipped;
  bool answered_empty = false;  // no model answered: the completion is empty

  std::string decision;         // none, single-line or multi-line (syntax/)
  std::string decision_reason;
  std::string language;         // the grammar used; empty: the text alone
  double reparse_ms = 0;        // the document's last incremental reparse (I/O thread)
  double attach_ms = 0;         // syntax work on the I/O thread for this request
  int other_files = 0, other_files_tokens = 0;  // context from other documents in the prompt
  int prompt_tokens = 0;
  int matched_tokens = 0;    // prompt tokens whose KV came from the prefix cache
  int prefilled_tokens = 0;  // prompt tokens computed for this request
  int generated_tokens = 0;
  engine::FimMode fim = engine::FimMode::PrefixOnly;
  bool truncated = false;  // the prompt's prefix or suffix was cut to fit its limits
  int segments = 0, segments_tokenized = 0;
  engine::StopReason stop = engine::StopReason::MaxTokens;
  std::string generated_text;  // before post-processing
  double prefill_ms = 0, decode_ms = 0, total_ms = 0;
  StageTimes stages;

  bool speculating = false;
  engine::SpeculationStats speculation;
  int k_draft = 0, k_ngram = 0;  // the proposal sizes each source would choose next

  // Set when the prompt was shortened so that its prefill fits in its share of the deadline.
  struct PrefillBound {
    int budget_tokens = 0;
    int dropped_prompt_tokens = 0;
  };
  std::optional<PrefillBound> prefill_bound;

  struct Cache {
    double hit_rate = 0;
    size_t blocks = 0;
    uint64_t evicted_blocks = 0;
    int pool_blocks_used = 0, pool_blocks_free = 0;
    size_t pool_bytes_used = 0;
  } cache;

  // The server's stream (remote backend).
  struct RemoteStream {
    std::string api;        // the server's API (openai, infill)
    int events = 0;         // server-sent events received
    int text_events = 0;    // of which carried text
    double first_byte_ms = 0;
    bool reused_connection = false;
    int connect_retries = 0;
    bool closed_early = false;  // the daemon closed the stream before the server ended it
    bool cancelled = false;
  };
  std::optional<RemoteStream> remote;

  nlohmann::json to_json() const;
};

}  // namespace ghostline::daemon
