// Turns a document and a cursor into the model's prompt: the text before the cursor (the
// prefix) and after it (the suffix), bounded in size, arranged in the model's fill-in-the-
// middle template.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/model/fim.h"
#include "syntax/cross_file.h"

namespace ghostline::engine {
class Tokenizer;
}

namespace ghostline::daemon {

using engine::FimMode;
using engine::FimTokens;

struct PromptLimits {
  int max_prefix_tokens = 1024;
  int max_suffix_tokens = 128;  // SPM: the suffix comes first, where typing does not change it
  // PSM prompts: everything after the cursor in the prompt is computed again on each keystroke,
  // so the FIM suffix is only the text near the cursor; the text after it goes before the
  // prefix as the context of another file (when the model has a file separator), where typing
  // does not change it.
  int max_local_suffix_tokens = 20;
  int max_far_suffix_tokens = 256;
  // Repository-level templates: snippets of other files, before everything else.
  int max_other_files_tokens = 384;
};

struct Prompt {
  std::vector<int32_t> tokens;
  FimMode mode = FimMode::PrefixOnly;
  int prefix_tokens = 0;
  int suffix_tokens = 0;
  int far_suffix_tokens = 0;  // PSM: suffix text given as earlier context (see PromptLimits)
  int other_files = 0;        // other files' snippets in the prompt
  int other_files_tokens = 0;
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
  // With the template's conventions: repository-level context where the family has it.
  PromptAssembler(const engine::Tokenizer& tokenizer, const engine::FimTemplate& fim);

  // `other_files`: snippets of other documents, given in a repository-level template (ignored
  // by the others); `repo`: the repository's name there.
  Prompt build(std::string_view text, size_t cursor, const PromptLimits& limits,
               std::span<const syntax::FileContext> other_files = {}, std::string_view repo = {});

  FimMode mode() const { return mode_; }
  // The most prompt tokens that text after the cursor takes under `limits` in this assembler's
  // template (the rest of the context is the prefix's).
  int max_suffix_tokens(const PromptLimits& limits) const;
  const FimTokens& fim() const { return fim_; }

 private:
  // Tokens of each segment of `text`, appended to `out`; segments not found in the cache are
  // counted in *tokenized.
  void append_segments(std::string_view text, bool opens_prefix,
                       std::vector<std::vector<int32_t>>& out, int* tokenized);
  const std::vector<int32_t>& segment_tokens(std::string_view segment, bool continuation,
                                             int* tokenized);
  // The text after the cursor, as tokens: up to `max_tokens`, from a window whose end is on the
  // grid (SPM, where the suffix comes first and must stay put while the user types).
  std::vector<int32_t> suffix_tokens(std::string_view text, size_t cursor, int max_tokens,
                                     Prompt& p);
  // PSM: where the far suffix starts, at or after `from` (the end of the cursor's line): a line
  // start that stays put while the user types.
  static size_t far_suffix_start(std::string_view text, size_t from);
  // PSM: up to `max_tokens` of suffix text from `begin`, given as earlier context.
  std::vector<int32_t> far_suffix_tokens(std::string_view text, size_t begin, int max_tokens,
                                         Prompt& p);

  const engine::Tokenizer& tokenizer_;
  FimTokens fim_;
  FimMode mode_;
  bool repo_context_;
  engine::FimFamily family_ = engine::FimFamily::Other;
  std::unordered_map<uint64_t, std::vector<int32_t>> segment_cache_;
};

}  // namespace ghostline::daemon
