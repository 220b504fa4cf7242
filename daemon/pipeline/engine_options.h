// What the completion service is built from: the model files and the engine's budget. Filled
// from the command line by daemon/cli (engine_flags.h); nothing here knows about arguments.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "daemon/remote/remote_options.h"

namespace ghostline::daemon {

inline constexpr int kDefaultMaxTokens = 48;
inline constexpr int kDefaultDeadlineMs = 80;

// Proposal sources for speculative decoding. Greedy output is the same in every mode.
enum class SpeculationMode {
  Auto,   // n-gram lookup in the prompt, and the draft model when one is given
  Ngram,  // n-gram lookup only
  Draft,  // the draft model only (needs one)
  Off,    // one target step per token (to measure what speculation saves)
};

// Where completions are computed: an engine backend (Auto, Cpu, Cuda: engine_backend() gives its
// engine::BackendKind, and engine::make_backend resolves Auto) or an inference server (Remote).
enum class BackendChoice { Auto, Cpu, Cuda, Remote };

std::optional<BackendChoice> parse_backend_choice(std::string_view word);
const char* backend_choice_name(BackendChoice backend);

std::optional<SpeculationMode> parse_speculation_mode(std::string_view word);
const char* speculation_mode_name(SpeculationMode mode);

struct EngineOptions {
  std::string model;  // GGUF file; empty: the default model shipped in models/
  int threads = 0;    // 0: all cores
  int max_tokens = kDefaultMaxTokens;
  int deadline_ms = kDefaultDeadlineMs;
  int kv_mib = 256;
  bool no_prefix_cache = false;  // for benchmarks: compute every prompt from scratch
  SpeculationMode speculation = SpeculationMode::Auto;
  std::string draft{};  // draft model for speculative decoding (same vocabulary); empty: none
  BackendChoice backend = BackendChoice::Auto;
  remote::RemoteOptions remote{};  // --backend remote: the server and how to reach it
};

}  // namespace ghostline::daemon
