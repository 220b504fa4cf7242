#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include <xxhash.h>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer_impl.h"
#include "base/utf8.h"

namespace ghostline::engine {

// ---- StringIndex / MergeTable ----

namespace {
uint64_t hash_string(std::string_view s) {
  return XXH3_64bits(s.data(), s.size());
}
}  // namespace

void StringIndex::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  size_ = 0;
  for (const Slot& s : old)
    if (s.value >= 0) put(s.key, s.value);
  rebuild_filter();
}

// About 32 bits per key: two bits per key leave roughly 0.4% false positives.
void StringIndex::rebuild_filter() {
  size_t bits = 64;
  while (bits < slots_.size() * 16) bits <<= 1;
  filter_.assign(bits / 64, 0);
  filter_mask_ = bits - 1;
  for (const Slot& s : slots_) {
    if (s.value < 0) continue;
    uint64_t a = (s.hash >> 20) & filter_mask_, b = (s.hash >> 42) & filter_mask_;
    filter_[a / 64] |= 1ull << (a % 64);
    filter_[b / 64] |= 1ull << (b % 64);
  }
}

void StringIndex::grow() {
  reserve(std::max<size_t>(16, slots_.size()));
}

void StringIndex::put(std::string_view key, int32_t value) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  uint64_t h = hash_string(key);
  uint64_t a = (h >> 20) & filter_mask_, b = (h >> 42) & filter_mask_;
  filter_[a / 64] |= 1ull << (a % 64);
  filter_[b / 64] |= 1ull << (b % 64);
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.value < 0) {
      s = {key, h, value};
      ++size_;
      return;
    }
    if (s.hash == h && s.key == key) {
      s.value = value;
      return;
    }
  }
}

int32_t StringIndex::get(std::string_view key) const {
  if (slots_.empty()) return -1;
  uint64_t h = hash_string(key);
  if (!may_contain(h)) return -1;
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.value < 0) return -1;
    if (s.hash == h && s.key == key) return s.value;
  }
}

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
}

void MergeTable::insert(int32_t left, int32_t right, Merge m) {
  uint64_t k = key(left, right);
  for (size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
    if (slots_[i].key == kEmpty) {
      slots_[i] = {k, m};
      return;
    }
    if (slots_[i].key == k) return;
  }
}

const MergeTable::Merge* MergeTable::find(int32_t left, int32_t right) const {
  uint64_t k = key(left, right);
  for (size_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
    if (slots_[i].key == k) return &slots_[i].merge;
    if (slots_[i].key == kEmpty) return nullptr;
  }
}

// ---- loading ----

namespace {

// Token texts that llama.cpp recognises as special tokens when the metadata does not name
// them (llama-vocab.cpp); the tokens found are treated as control tokens.
constexpr std::string_view kEotTexts[] = {"<|eot_id|>",    "<|im_end|>",           "<|end|>",
                                          "<end_of_turn>", "<|endoftext|>",        "<EOT>",
                                          "_<EOT>",        "<｜end▁of▁sentence｜>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<｜fim▁begin｜>",
                                             "<PRE>",          "▁<PRE>",       "<fim_prefix>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<｜fim▁hole｜>",
                                             "<SUF>",          "▁<SUF>",       "<fim_suffix>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<｜fim▁end｜>",
                                             "<MID>",          "▁<MID>",       "<fim_middle>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<PAD>", "<fim_pad>"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                             "<REPO>",       "<reponame>",    "<repo_name>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>", "<file_sep>", "<filename>",
                                             "<|file_separator|>"};

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
  auto impl = std::make_unique<Impl>();
  Impl& t = *impl;
  const std::string where = file.path().string() + ": ";
  auto model = file.get_string("tokenizer.ggml.model");
  if (!model) throw GgufError(where + "no tokenizer (tokenizer.ggml.model is missing)");
  t.model_name = std::string(*model);
  if (t.model_name == "gpt2") {
    t.kind = Impl::Kind::kBpe;
  } else if (t.model_name == "llama") {
    t.kind = Impl::Kind::kSpm;
  } else {
    throw GgufError(where + "unsupported tokenizer model \"" + t.model_name +
                    "\" (supported: gpt2 = byte-level BPE, llama = SentencePiece)");
  }
  t.pre_name = std::string(file.get_string("tokenizer.ggml.pre").value_or("default"));

  auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (tokens.empty()) throw GgufError(where + "tokenizer.ggml.tokens is missing or empty");
  if (tokens.size() > static_cast<size_t>(INT32_MAX / 2))
    throw GgufError(where + "vocabulary too large");
  const size_t n = tokens.size();
  size_t total = 0;
  for (auto s : tokens) total += s.size();
  t.arena.reserve(total);
  t.offsets.reserve(n + 1);
  for (auto s : tokens) {
    t.offsets.push_back(static_cast<uint32_t>(t.arena.size()));
    t.arena += s;
  }
  t.offsets.push_back(static_cast<uint32_t>(t.arena.size()));

  t.types.assign(n, TokenType::NORMAL);
  auto types = file.get_int_array("tokenizer.ggml.token_type");
  if (!types.empty()) {
    if (types.size() != n)
      throw GgufError(where + "tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                      " entries for " + std::to_string(n) + " tokens");
    for (size_t i = 0; i < n; ++i)
      t.types[i] =
          types[i] >= 0 && types[i] <= 6 ? static_cast<TokenType>(types[i]) : TokenType::UNDEFINED;
  }

  t.index.reserve(n + n / 4);
  for (size_t i = 0; i < n; ++i)
    t.index.put(t.text(static_cast<int32_t>(i)), static_cast<int32_t>(i));

  // Special tokens named by metadata; out-of-range ids are ignored.
  auto special = [&](std::string_view key) -> std::optional<int32_t> {
    auto v = file.get_int(key);
    if (!v || *v < 0 || *v >= static_cast<int64_t>(n)) return std::nullopt;
    return static_cast<int32_t>(*v);
  };
  Specials& sp = t.specials;
  sp.bos = special("tokenizer.ggml.bos_token_id");
  sp.eos = special("tokenizer.ggml.eos_token_id");
  sp.eot = special("tokenizer.ggml.eot_token_id");
  sp.pad = special("tokenizer.ggml.padding_token_id");
  sp.fim_pre = special("tokenizer.ggml.fim_pre_token_id");
  if (!sp.fim_pre) sp.fim_pre = special("tokenizer.ggml.prefix_token_id");
  sp.fim_suf = special("tokenizer.ggml.fim_suf_token_id");
  if (!sp.fim_suf) sp.fim_suf = special("tokenizer.ggml.suffix_token_id");
  sp.fim_mid = special("tokenizer.ggml.fim_mid_token_id");
  if (!sp.fim_mid) sp.fim_mid = special("tokenizer.ggml.middle_token_id");
  sp.fim_pad = special("tokenizer.ggml.fim_pad_token_id");
  sp.fim_rep = special("tokenizer.ggml.fim_rep_token_id");
  sp.fim_sep = special("tokenizer.ggml.fim_sep_token_id");
  auto detect = [&](std::optional<int32_t>& slot, std::span<const std::string_view> texts) {
    if (slot) return;
    for (auto text : texts) {
      int32_t id = t.find(text);
      if (id < 0) continue;
      slot = id;
      // Like llama.cpp: a token recognised by its text is a control token, so that the same
      // text in a file is never read as the special token.
      t.types[id] = TokenType::CONTROL;
      return;
    }
  };
  detect(sp.eot, kEotTexts);
  detect(sp.fim_pre, kFimPreTexts);
  detect(sp.fim_suf, kFimSufTexts);
  detect(sp.fim_mid, kFimMidTexts);
  detect(sp.fim_pad, kFimPadTexts);
  detect(sp.fim_rep, kFimRepTexts);
  detect(sp.fim_sep, kFimSepTexts);

  // Tokens that end a generation, as llama.cpp collects them: EOS, EOT, every token with an
  // end-of-turn text (made control tokens too), and the FIM pad/repo/file separators, which a
  // FIM model emits when the middle is done.
  for (auto text : kEotTexts) {
    int32_t id = t.find(text);
    if (id < 0) continue;
    t.types[id] = TokenType::CONTROL;
    t.end_of_generation.push_back(id);
  }
  for (const auto& id : {sp.eos, sp.eot, sp.fim_pad, sp.fim_rep, sp.fim_sep})
    if (id) t.end_of_generation.push_back(*id);
  std::sort(t.end_of_generation.begin(), t.end_of_generation.end());
  t.end_of_generation.erase(std::unique(t.end_of_generation.begin(), t.end_of_generation.end()),
                            t.end_of_generation.end());

  if (t.kind == Impl::Kind::kBpe) {
    load_bpe(t, file);
    sp.add_bos =
        file.get_bool("tokenizer.ggml.add_bos_token").value_or(t.pretokenizer->ignore_merges());
  } else {
    t.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
    load_spm(t);
    sp.add_bos = file.get_bool("tokenizer.ggml.add_bos_token").value_or(true);
    auto scores = file.get_float_array("tokenizer.ggml.scores");
    if (!scores.empty() && scores.size() != n)
      throw GgufError(where + "tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                      " entries for " + std::to_string(n) + " tokens");
    t.scores = scores.empty() ? std::vector<float>(n, 0.0f) : std::move(scores);
  }

  for (int32_t id = 0; id < static_cast<int32_t>(n); ++id) {
    TokenType ty = t.types[id];
    if ((ty == TokenType::CONTROL || ty == TokenType::USER_DEFINED || ty == TokenType::UNKNOWN) &&
        !t.text(id).empty())
      t.partition_tokens.push_back(id);
  }
  for (int32_t id : t.partition_tokens)
    if (t.text(id).find('\n') != std::string_view::npos) t.newline_in_special = true;
  std::stable_sort(t.partition_tokens.begin(), t.partition_tokens.end(),
                   [&](int32_t a, int32_t b) { return t.text(a).size() > t.text(b).size(); });
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

// ---- encoding ----

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  return encode_impl(text, parse_special, false);
}

std::vector<int32_t> Tokenizer::encode_continuation(std::string_view text,
                                                    bool parse_special) const {
  return encode_impl(text, parse_special, true);
}

std::vector<int32_t> Tokenizer::encode_impl(std::string_view text, bool parse_special,
                                            bool continuation) const {
  const Impl& t = *impl_;
  // Split out special tokens, longest first, each at every occurrence (llama.cpp's
  // tokenizer_st_partition). User-defined tokens are always split out; control and unknown
  // tokens only when parse_special is set.
  struct Fragment {
    int32_t token;  // -1 for text
    size_t begin, end;
  };
  std::vector<Fragment> frags;
  if (!text.empty()) frags.push_back({-1, 0, text.size()});
  std::vector<Fragment> next;
  // Which byte pairs occur in the text: most candidate tokens can be ruled out without
  // searching for them (deepseek-coder has 254 user-defined tokens).
  std::vector<uint64_t> pairs;
  auto may_occur = [&](std::string_view tok) {
    if (pairs.empty()) {
      pairs.assign(65536 / 64 + 256 / 64, 0);
      for (size_t i = 0; i < text.size(); ++i) {
        auto a = static_cast<unsigned char>(text[i]);
        pairs[1024 + a / 64] |= 1ull << (a % 64);
        if (i + 1 < text.size()) {
          unsigned k = a << 8 | static_cast<unsigned char>(text[i + 1]);
          pairs[k / 64] |= 1ull << (k % 64);
        }
      }
    }
    auto a = static_cast<unsigned char>(tok[0]);
    if (tok.size() == 1) return (pairs[1024 + a / 64] >> (a % 64) & 1) != 0;
    unsigned k = a << 8 | static_cast<unsigned char>(tok[1]);
    return (pairs[k / 64] >> (k % 64) & 1) != 0;
  };
  for (int32_t id : t.partition_tokens) {
    TokenType ty = t.types[id];
    if (!parse_special && ty != TokenType::USER_DEFINED) continue;
    std::string_view tok = t.text(id);
    if (tok.size() > text.size() || !may_occur(tok)) continue;
    if (text.find(tok) == std::string_view::npos) continue;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.begin;
      while (pos < f.end) {
        size_t hit = text.substr(0, f.end).find(tok, pos);
        if (hit == std::string_view::npos) break;
        if (hit > pos) next.push_back({-1, pos, hit});
        next.push_back({id, hit, hit + tok.size()});
        pos = hit + tok.size();
      }
      if (pos < f.end) next.push_back({-1, pos, f.end});
    }
    frags.swap(next);
  }

  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (t.kind == Impl::Kind::kBpe) {
    for (const Fragment& f : frags) {
      if (f.token >= 0)
        out.push_back(f.token);
      else
        t.encode_bpe(text.substr(f.begin, f.end - f.begin), out);
    }
  } else {
    // SentencePiece prefixes the text with a space, and again after each special token.
    bool prev_special = !continuation;
    std::string buf;
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      buf.clear();
      if (t.add_space_prefix && prev_special) buf += ' ';
      buf.append(text.substr(f.begin, f.end - f.begin));
      t.encode_spm(buf, out);
      prev_special = false;
    }
  }
  return out;
}

// ---- decoding ----

void Tokenizer::Impl::append_token_bytes(int32_t id, std::string& out) const {
  std::string_view s = text(id);
  TokenType ty = types[id];
  if (ty == TokenType::BYTE && s.size() == 6 && s.substr(0, 3) == "<0x" && s[5] == '>') {
    out += static_cast<char>(std::stoi(std::string(s.substr(3, 2)), nullptr, 16));
    return;
  }
  if (ty == TokenType::CONTROL || ty == TokenType::UNKNOWN ||
      (ty == TokenType::USER_DEFINED && kind == Kind::kBpe)) {
    out += s;
    return;
  }
  if (kind == Kind::kSpm) {
    // "▁" (U+2581) stands for a space.
    for (size_t i = 0; i < s.size();) {
      if (s.substr(i, 3) == "\xe2\x96\x81") {
        out += ' ';
        i += 3;
      } else {
        out += s[i++];
      }
    }
    return;
  }
  // Byte-level BPE: every character stands for one byte.
  for (size_t i = 0; i < s.size();) {
    size_t start = i;
    uint32_t cp = utf8_decode_lenient(s, i);
    if (cp < codepoint_byte.size() && codepoint_byte[cp] >= 0)
      out += static_cast<char>(codepoint_byte[cp]);
    else
      out += s.substr(start, i - start);
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= n_vocab())
      throw std::out_of_range("token id " + std::to_string(id) + " outside the vocabulary of " +
                              std::to_string(n_vocab()));
    size_t before = out.size();
    impl_->append_token_bytes(id, out);
    if (i == 0 && impl_->kind == Impl::Kind::kSpm && impl_->add_space_prefix && !is_control(id) &&
        out.size() > before && out[before] == ' ')
      out.erase(before, 1);
  }
  return out;
}

std::string Tokenizer::decode_continuation(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= n_vocab())
      throw std::out_of_range("token id " + std::to_string(id) + " outside the vocabulary of " +
                              std::to_string(n_vocab()));
    impl_->append_token_bytes(id, out);
  }
  return out;
}

bool Tokenizer::splits_exactly_at(std::string_view text, size_t pos) const {
  if (pos == 0 || pos >= text.size()) return pos <= text.size();
  const Impl& t = *impl_;
  if (text[pos - 1] != '\n' || t.newline_in_special) return false;
  // Conservative notion of "not whitespace": a printable ASCII character.
  auto graphic = [&](size_t i) { return text[i] > ' ' && text[i] < 0x7f; };
  if (t.kind == Impl::Kind::kSpm) return t.spm_barrier['\n'];
  switch (t.pretokenizer->newline_cut()) {
    case PreTokenizer::NewlineCut::kAlways:
      return true;
    case PreTokenizer::NewlineCut::kBeforeNonSpace:
      return graphic(pos);
    case PreTokenizer::NewlineCut::kBetweenNonSpaces:
      return graphic(pos) && (pos == 1 || graphic(pos - 2));
  }
  return false;
}

std::string_view Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_vocab()) throw std::out_of_range("token id " + std::to_string(id));
  return impl_->text(id);
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= n_vocab()) throw std::out_of_range("token id " + std::to_string(id));
  std::string out;
  impl_->append_token_bytes(id, out);
  return out;
}

int32_t Tokenizer::n_vocab() const {
  return impl_->n_vocab();
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  int32_t id = impl_->find(text);
  if (id < 0) return std::nullopt;
  return id;
}

const std::vector<int32_t>& Tokenizer::end_of_generation() const {
  return impl_->end_of_generation;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  const auto& eog = impl_->end_of_generation;
  return std::binary_search(eog.begin(), eog.end(), id);
}

const Tokenizer::Specials& Tokenizer::specials() const {
  return impl_->specials;
}

bool Tokenizer::is_control(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return false;
  TokenType ty = impl_->types[id];
  return ty == TokenType::CONTROL || ty == TokenType::UNKNOWN || ty == TokenType::UNUSED;
}

std::string_view Tokenizer::model() const {
  return impl_->model_name;
}
std::string_view Tokenizer::pre() const {
  return impl_->pre_name;
}

}  // namespace ghostline::engine
