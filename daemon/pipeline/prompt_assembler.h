// Turns a document and a cursor into the model's prompt: the text before the cursor (the
// prefix) and after it (the suffix), bounded in size, arranged in the model's fill-in-the-
// middle template.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/model/fim.h"

namespace ghostline::engine {
class Tokenizer;
}

namespace ghostline::daemon {

using engine::FimMode;
using engine::FimTokens;

struct PromptLimits {
  int max_prefix_tokens = 1024;
  int max_suffix_tokens = 128;
};

struct Prompt {
  std::vector<int32_t> tokens;
  FimMode mode = FimMode::PrefixOnly;
  int prefix_tokens = 0;
  int suffix_tokens = 0;
  bool truncated = false;    // prefix or suffix was cut to fit the limits
  int segments = 0;          // text segments in the prompt
  int segments_tokenized = 0;  // of which were not in the segment cache
};

// Builds prompts while the user types, so that consecutive prompts share as many leading
// tokens as possible: the prefix window starts at a position that stays put while typing,
// the text is cut into segments at line ends, and each segment is tokenized once and cached
// by the xxHash of its text. Only the segment holding the cursor's line is new on a keystroke.
class PromptAssembler {
 public:
  PromptAssembler(const engine::Tokenizer& tokenizer, FimTokens fim, FimMode mode);

  Prompt build(std::string_view text, size_t cursor, const PromptLimits& limits);

  FimMode mode() const { return mode_; }
  const FimTokens& fim() const { return fim_; }

 private:
  // Tokens of each segment of `text`, appended to `out`; segments not found in the cache are
  // counted in *tokenized.
  void append_segments(std::string_view text, bool opens_prefix, std::vector<std::vector<int32_t>>& out,
                       int* tokenized);
  const std::vector<int32_t>& segment_tokens(std::string_view segment, bool continuation, int* tokenized);

  const engine::Tokenizer& tokenizer_;
  FimTokens fim_;
  FimMode mode_;
  std::unordered_map<uint64_t, std::vector<int32_t>> segment_cache_;
};

}  // namespace ghostline::daemon
