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
  for (const auto& t : {s.eos, s.eot, s.fim_pad, s.fim_sep})
    if (t && std::find(f.stop.begin(), f.stop.end(), *t) == f.stop.end()) f.stop.push_back(*t);
  f.add_bos = s.add_bos && s.bos.has_value();
  if (f.add_bos) f.bos = *s.bos;
  return f;
}

FimTemplate fim_template(const Model& model) {
  FimTemplate t{.tokens = fim_tokens(model.tokenizer())};
  if (t.tokens.pre < 0)
    t.mode = FimMode::PrefixOnly;
  else
    t.mode = model.file().has("ghostline.fim.spm_template") ? FimMode::Spm : FimMode::Psm;
  return t;
}

}  // namespace ghostline::engine
