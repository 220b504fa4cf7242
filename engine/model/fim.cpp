#include "engine/model/fim.h"

#include <algorithm>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {

const char* fim_mode_name(FimMode mode) {
  switch (mode) {
    case FimMode::PrefixOnly:
      return "prefix-only";
    case FimMode::Psm:
      return "psm";
    case FimMode::Spm:
      return "spm";
  }
  return "?";
}

FimTokens fim_tokens(const Tokenizer& tokenizer) {
  const auto& s = tokenizer.specials();
  FimTokens f;
  if (s.fim_pre && s.fim_suf && s.fim_mid) {
    f.pre = *s.fim_pre;
    f.suf = *s.fim_suf;
    f.mid = *s.fim_mid;
  }
  if (s.fim_sep) f.file_sep = *s.fim_sep;
  if (s.fim_rep) f.repo = *s.fim_rep;
  for (const auto& t : {s.eos, s.eot, s.fim_pad, s.fim_sep})
    if (t && std::find(f.stop.begin(), f.stop.end(), *t) == f.stop.end()) f.stop.push_back(*t);
  f.add_bos = s.add_bos && s.bos.has_value();
  if (f.add_bos) f.bos = *s.bos;
  return f;
}

const char* fim_family_name(FimFamily family) {
  switch (family) {
    case FimFamily::None: return "none";
    case FimFamily::QwenCoder: return "qwen-coder";
    case FimFamily::StarCoder: return "starcoder";
    case FimFamily::CodeGemma: return "codegemma";
    case FimFamily::DeepSeekCoder: return "deepseek-coder";
    case FimFamily::CodeLlama: return "codellama";
    case FimFamily::Ghostline: return "ghostline";
    case FimFamily::Other: return "other";
  }
  return "?";
}

FimFamily fim_family(const Tokenizer& tokenizer, bool ghostline_metadata) {
  const auto& s = tokenizer.specials();
  if (!s.fim_pre || !s.fim_suf || !s.fim_mid) return FimFamily::None;
  if (ghostline_metadata) return FimFamily::Ghostline;
  const std::string_view pre = tokenizer.token_text(*s.fim_pre);
  const std::string_view sep = s.fim_sep ? tokenizer.token_text(*s.fim_sep) : std::string_view{};
  if (pre == "<|fim_prefix|>") {
    if (tokenizer.find_token("<|file_separator|>")) return FimFamily::CodeGemma;
    return FimFamily::QwenCoder;
  }
  if (pre == "<fim_prefix>")
    return sep == "<file_sep>" || sep.empty() ? FimFamily::StarCoder : FimFamily::Other;
  if (pre == "<｜fim▁begin｜>") return FimFamily::DeepSeekCoder;
  if (pre == "<PRE>" || pre == "▁<PRE>") return FimFamily::CodeLlama;
  return FimFamily::Other;
}

FimTemplate fim_template(const Tokenizer& tokenizer, bool spm, bool ghostline_metadata) {
  FimTemplate t{.tokens = fim_tokens(tokenizer)};
  t.family = fim_family(tokenizer, ghostline_metadata);
  if (t.tokens.pre < 0) {
    t.mode = FimMode::PrefixOnly;
    return t;
  }
  t.mode = spm ? FimMode::Spm : FimMode::Psm;
  if (t.family == FimFamily::CodeGemma)
    if (auto sep = tokenizer.find_token("<|file_separator|>")) {
      t.tokens.file_sep = *sep;
      if (std::find(t.tokens.stop.begin(), t.tokens.stop.end(), *sep) == t.tokens.stop.end())
        t.tokens.stop.push_back(*sep);
    }
  // Families trained on repository-level prompts; the others see the current file only.
  t.repo_context = t.tokens.file_sep >= 0 &&
                   (t.family == FimFamily::QwenCoder || t.family == FimFamily::StarCoder ||
                    t.family == FimFamily::CodeGemma);
  if (!t.repo_context) t.tokens.repo = -1;
  return t;
}

FimTemplate fim_template(const Tokenizer& tokenizer, const GgufFile& file) {
  const bool spm = file.has("ghostline.fim.spm_template");
  return fim_template(tokenizer, spm, spm || file.has("ghostline.fim.psm_template"));
}

FimTemplate fim_template(const Model& model) {
  return fim_template(model.tokenizer(), model.file());
}

}  // namespace ghostline::engine
