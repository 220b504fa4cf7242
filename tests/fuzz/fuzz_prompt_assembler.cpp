// The prompt assembler on arbitrary documents and cursors, for each tokenizer and FIM layout:
// prompts stay within their limits, hold only vocabulary ids, and do not depend on what the
// segment cache held before (a reused assembler gives the same tokens as a fresh one).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/pipeline/prompt_assembler.h"
#include "engine/model/fim.h"
#include "fuzz_check.h"
#include "fuzz_tokenizers.h"

using ghostline::daemon::Prompt;
using ghostline::daemon::PromptAssembler;
using ghostline::daemon::PromptLimits;
using ghostline::engine::FimMode;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ghostline::fuzz::shared_tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const auto& all = ghostline::fuzz::shared_tokenizers();
  const auto& tok = *all[data[0] % all.size()].tokenizer;
  // The FIM tokens as engine::fim_tokens() takes them from the tokenizer's specials (this
  // target links the tokenizer without the model layer).
  const auto& specials = tok.specials();
  ghostline::engine::FimTokens fim;
  if (specials.fim_pre && specials.fim_suf && specials.fim_mid) {
    fim.pre = *specials.fim_pre;
    fim.suf = *specials.fim_suf;
    fim.mid = *specials.fim_mid;
  }
  if (specials.fim_sep) fim.file_sep = *specials.fim_sep;
  if (specials.add_bos && specials.bos) {
    fim.add_bos = true;
    fim.bos = *specials.bos;
  }
  FimMode mode = static_cast<FimMode>((data[0] / all.size()) % 3);
  if (mode != FimMode::PrefixOnly && (fim.pre < 0 || fim.suf < 0 || fim.mid < 0))
    mode = FimMode::PrefixOnly;
  PromptLimits limits;
  limits.max_prefix_tokens = 1 + data[1] % 64;
  limits.max_suffix_tokens = data[2] % 32;
  limits.max_local_suffix_tokens = data[2] % 8;
  limits.max_far_suffix_tokens = data[3] % 32;
  std::string_view text(reinterpret_cast<const char*>(data + 4), size - 4);

  // One assembler per tokenizer and layout lives across inputs, as in the daemon.
  static std::map<std::pair<const void*, FimMode>, std::unique_ptr<PromptAssembler>> reused;
  auto& warm = reused[{&tok, mode}];
  if (!warm) warm = std::make_unique<PromptAssembler>(tok, fim, mode);

  // Several cursors in the same text, as keystrokes at different places would give.
  for (size_t k = 0; k < 3; ++k) {
    size_t cursor = text.empty() ? 0 : (static_cast<size_t>(data[1 + k]) * 131) % (text.size() + 1);
    Prompt p = warm->build(text, cursor, limits);
    PromptAssembler fresh(tok, fim, mode);
    Prompt q = fresh.build(text, cursor, limits);
    FUZZ_CHECK(p.tokens == q.tokens,
               "a reused assembler's prompt differs from a fresh one's (cursor %zu)", cursor);
    for (int32_t id : p.tokens) FUZZ_CHECK(id >= 0 && id < tok.n_vocab(), "id %d", id);
    FUZZ_CHECK(p.prefix_tokens <= limits.max_prefix_tokens, "prefix of %d tokens over %d",
               p.prefix_tokens, limits.max_prefix_tokens);
    FUZZ_CHECK(p.suffix_tokens + p.far_suffix_tokens <= warm->max_suffix_tokens(limits),
               "suffix of %d + %d tokens", p.suffix_tokens, p.far_suffix_tokens);
    FUZZ_CHECK(static_cast<size_t>(p.prefix_tokens + p.suffix_tokens + p.far_suffix_tokens) <=
                   p.tokens.size(),
               "counted more tokens than the prompt holds");
  }
  return 0;
}
