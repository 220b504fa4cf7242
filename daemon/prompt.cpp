#include "daemon/prompt.h"

#include <algorithm>

#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {

const char* fim_mode_name(FimMode mode) {
  switch (mode) {
    case FimMode::PrefixOnly: return "prefix-only";
    case FimMode::Psm: return "psm";
    case FimMode::Spm: return "spm";
  }
  return "?";
}

FimTokens fim_tokens(const engine::Tokenizer& tokenizer) {
  const auto& s = tokenizer.specials();
  FimTokens f;
  if (s.fim_pre && s.fim_suf && s.fim_mid) {
    f.pre = *s.fim_pre;
    f.suf = *s.fim_suf;
    f.mid = *s.fim_mid;
  }
  for (const auto& t : {s.eos, s.eot, s.fim_pad, s.fim_sep})
    if (t && std::find(f.stop.begin(), f.stop.end(), *t) == f.stop.end()) f.stop.push_back(*t);
  f.add_bos = s.add_bos && s.bos.has_value();
  if (f.add_bos) f.bos = *s.bos;
  return f;
}

namespace {

// A byte budget that comfortably holds `tokens` tokens of code, so that only the part of a
// large file near the cursor is tokenized.
size_t bytes_for(int tokens) { return static_cast<size_t>(tokens) * 8 + 256; }

// Moves `pos` forward to the start of a line (or a UTF-8 boundary) so that a cut prefix starts
// cleanly.
size_t clean_start(std::string_view text, size_t pos) {
  if (pos == 0) return 0;
  size_t nl = text.find('\n', pos);
  if (nl != std::string_view::npos && nl + 1 < text.size() && nl - pos < 512) return nl + 1;
  while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
  return pos;
}

size_t clean_end(std::string_view text, size_t pos) {
  if (pos >= text.size()) return text.size();
  size_t nl = text.rfind('\n', pos);
  if (nl != std::string_view::npos && pos - nl < 512) return nl + 1;
  while (pos > 0 && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) --pos;
  return pos;
}

}  // namespace

Prompt build_prompt(const engine::Tokenizer& tokenizer, const FimTokens& fim, FimMode mode,
                    std::string_view text, size_t cursor, const PromptLimits& limits) {
  Prompt p;
  p.mode = fim.pre < 0 ? FimMode::PrefixOnly : mode;
  cursor = std::min(cursor, text.size());

  size_t prefix_begin = 0;
  if (cursor > bytes_for(limits.max_prefix_tokens)) {
    prefix_begin = clean_start(text, cursor - bytes_for(limits.max_prefix_tokens));
    p.truncated = true;
  }
  std::vector<int32_t> prefix = tokenizer.encode(text.substr(prefix_begin, cursor - prefix_begin));
  if (static_cast<int>(prefix.size()) > limits.max_prefix_tokens) {
    prefix.erase(prefix.begin(), prefix.end() - limits.max_prefix_tokens);
    p.truncated = true;
  }
  std::vector<int32_t> suffix;
  if (p.mode != FimMode::PrefixOnly && limits.max_suffix_tokens > 0) {
    size_t suffix_end = text.size();
    if (suffix_end - cursor > bytes_for(limits.max_suffix_tokens)) {
      suffix_end = clean_end(text, cursor + bytes_for(limits.max_suffix_tokens));
      p.truncated = true;
    }
    suffix = tokenizer.encode(text.substr(cursor, suffix_end - cursor));
    if (static_cast<int>(suffix.size()) > limits.max_suffix_tokens) {
      suffix.resize(limits.max_suffix_tokens);
      p.truncated = true;
    }
  }
  p.prefix_tokens = static_cast<int>(prefix.size());
  p.suffix_tokens = static_cast<int>(suffix.size());

  auto& t = p.tokens;
  t.reserve(prefix.size() + suffix.size() + 4);
  if (fim.add_bos) t.push_back(fim.bos);
  switch (p.mode) {
    case FimMode::PrefixOnly:
      t.insert(t.end(), prefix.begin(), prefix.end());
      break;
    case FimMode::Psm:
      t.push_back(fim.pre);
      t.insert(t.end(), prefix.begin(), prefix.end());
      t.push_back(fim.suf);
      t.insert(t.end(), suffix.begin(), suffix.end());
      t.push_back(fim.mid);
      break;
    case FimMode::Spm:
      t.push_back(fim.suf);
      t.insert(t.end(), suffix.begin(), suffix.end());
      t.push_back(fim.pre);
      t.insert(t.end(), prefix.begin(), prefix.end());
      t.push_back(fim.mid);
      break;
  }
  return p;
}

}  // namespace ghostline::daemon
