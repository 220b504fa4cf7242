// Turns a document and a cursor into the model's prompt: the text before the cursor (the
// prefix) and after it (the suffix), bounded in size, arranged in the model's fill-in-the-
// middle template.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ghostline::engine {
class Tokenizer;
}

namespace ghostline::daemon {

enum class FimMode {
  PrefixOnly,  // the model has no FIM tokens: plain left-to-right continuation
  Psm,         // <pre> prefix <suf> suffix <mid>
  Spm,         // <suf> suffix <pre> prefix <mid>: only the end changes while typing
};

const char* fim_mode_name(FimMode mode);

struct FimTokens {
  int32_t pre = -1, suf = -1, mid = -1;
  std::vector<int32_t> stop;  // tokens that end a completion (EOS, EOT, FIM pad / file separator)
  bool add_bos = false;
  int32_t bos = -1;
};

// The FIM and stop tokens of a tokenizer; pre/suf/mid stay -1 when it has none.
FimTokens fim_tokens(const engine::Tokenizer& tokenizer);

struct PromptLimits {
  int max_prefix_tokens = 1024;
  int max_suffix_tokens = 128;
};

struct Prompt {
  std::vector<int32_t> tokens;
  FimMode mode = FimMode::PrefixOnly;
  int prefix_tokens = 0;
  int suffix_tokens = 0;
  bool truncated = false;  // prefix or suffix was cut to fit the limits
};

// Builds the prompt for `text` with the cursor at byte `cursor`.
Prompt build_prompt(const engine::Tokenizer& tokenizer, const FimTokens& fim, FimMode mode,
                    std::string_view text, size_t cursor, const PromptLimits& limits);

}  // namespace ghostline::daemon
