// What the completion service is built from: the model files and the engine's budget. Filled
// from the command line by daemon/cli (engine_flags.h); nothing here knows about arguments.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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

std::optional<SpeculationMode> parse_speculation_mode(std::string_view word);
const char* speculation_mode_name(SpeculationMode mode);

// Where the forward pass runs: auto (CUDA when built with it and a device exists, else the
// CPU), the CPU, a CUDA device, or a remote engine.
enum class BackendChoice { Auto, Cpu, Cuda, Remote };

inline std::optional<BackendChoice> parse_backend_choice(std::string_view word) {
  if (word == "auto") return BackendChoice::Auto;
  if (word == "cpu") return BackendChoice::Cpu;
  if (word == "cuda") return BackendChoice::Cuda;
  if (word == "remote") return BackendChoice::Remote;
  return std::nullopt;
}

inline const char* backend_choice_name(BackendChoice choice) {
  switch (choice) {
    case BackendChoice::Cpu: return "cpu";
    case BackendChoice::Cuda: return "cuda";
    case BackendChoice::Remote: return "remote";
    case BackendChoice::Auto: break;
  }
  return "auto";
}

struct EngineOptions {
  std::string model;  // GGUF file; empty: the default model shipped in models/
  int threads = 0;    // 0: all cores
  int max_tokens = kDefaultMaxTokens;
  int deadline_ms = kDefaultDeadlineMs;
  int kv_mib = 256;
  bool no_prefix_cache = false;  // for benchmarks: compute every prompt from scratch
  SpeculationMode speculation = SpeculationMode::Auto;
  std::string draft;  // draft model for speculative decoding (same vocabulary); empty: none
  BackendChoice backend = BackendChoice::Auto;
};

}  // namespace ghostline::daemon
