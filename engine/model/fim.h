// Fill-in-the-middle: which prompt template a model completes in and the tokens that build it.
// The one place that knows FIM conventions; the tokenizer only finds the special tokens.
#pragma once

#include <cstdint>
#include <vector>

namespace ghostline::engine {

class GgufFile;
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
  int32_t repo = -1;      // opens repository-level context with the repository's name
  std::vector<int32_t> stop;  // tokens that end a completion (EOS, EOT, FIM pad / file separator)
  bool add_bos = false;
  int32_t bos = -1;
};

// The FIM and stop tokens of a tokenizer; pre/suf/mid stay -1 when it has none.
FimTokens fim_tokens(const Tokenizer& tokenizer);

// The model families whose prompt conventions differ, told apart by their special tokens.
enum class FimFamily {
  None,          // no FIM tokens
  QwenCoder,     // <|fim_prefix|> ... and <|repo_name|>, <|file_sep|>: repository-level context
  StarCoder,     // <fim_prefix> ... and <reponame>, <file_sep>: repository-level context
  CodeGemma,     // <|fim_prefix|> ... and <|file_separator|> between files
  DeepSeekCoder, // <｜fim▁begin｜> <｜fim▁hole｜> <｜fim▁end｜>
  CodeLlama,     // ▁<PRE> ▁<SUF> ▁<MID>, ▁<EOT>
  Ghostline,     // our default model (ghostline.fim.* metadata): trained on single files
  Other,         // FIM tokens of another convention
};
const char* fim_family_name(FimFamily family);

struct FimTemplate {
  FimMode mode = FimMode::PrefixOnly;
  FimFamily family = FimFamily::None;
  FimTokens tokens;
  // Whether the family was trained with other files before the current one
  // (`[repo name] (<file_sep> path \n text)* ... <fim_prefix> ...`): then snippets of other
  // documents and the far suffix go there.
  bool repo_context = false;
};

// The family of a tokenizer's FIM tokens.
FimFamily fim_family(const Tokenizer& tokenizer, bool ghostline_metadata);

// SPM when the file says the model was trained on SPM prompts (ghostline.fim.spm_template: SPM
// prompts change only at their end while the user types, so the cached prefix survives every
// keystroke), PSM when the vocabulary has FIM tokens, prefix-only otherwise.
FimTemplate fim_template(const Model& model);
// The same for a tokenizer and the file it came from (a vocabulary-only file, a remote model's).
FimTemplate fim_template(const Tokenizer& tokenizer, const GgufFile& file);
// The same from a tokenizer and what its file says: trained on SPM prompts, one of our models.
FimTemplate fim_template(const Tokenizer& tokenizer, bool spm, bool ghostline_metadata);

}  // namespace ghostline::engine
