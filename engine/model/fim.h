// Fill-in-the-middle: which prompt template a model completes in and the tokens that build it.
// The one place that knows FIM conventions; the tokenizer only finds the special tokens.
#pragma once

#include <cstdint>
#include <vector>

namespace ghostline::engine {

class Model;
class Tokenizer;

enum class FimMode {
  PrefixOnly,  // the model has no FIM tokens: plain left-to-right continuation
  Psm,         // <pre> prefix <suf> suffix <mid>
  Spm,         // <suf> suffix <pre> prefix <mid>: only the end changes while typing
};

const char* fim_mode_name(FimMode mode);

struct FimTokens {
  int32_t pre = -1, suf = -1, mid = -1;
  int32_t file_sep = -1;  // separates files of repository-level context; -1 when there is none
  std::vector<int32_t> stop;  // tokens that end a completion (EOS, EOT, FIM pad / file separator)
  bool add_bos = false;
  int32_t bos = -1;
};

// The FIM and stop tokens of a tokenizer; pre/suf/mid stay -1 when it has none.
FimTokens fim_tokens(const Tokenizer& tokenizer);

struct FimTemplate {
  FimMode mode = FimMode::PrefixOnly;
  FimTokens tokens;
};

// SPM when the file says the model was trained on SPM prompts (ghostline.fim.spm_template: SPM
// prompts change only at their end while the user types, so the cached prefix survives every
// keystroke), PSM when the vocabulary has FIM tokens, prefix-only otherwise.
FimTemplate fim_template(const Model& model);

}  // namespace ghostline::engine
