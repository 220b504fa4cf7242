// Byte-level BPE as llama.cpp runs it: pre-tokenize, map every byte to a printable character
// (GPT-2's table), then merge adjacent symbols by rank, lowest rank first, leftmost on ties.
#include <algorithm>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer_impl.h"
#include "base/utf8.h"

namespace ghostline::engine {
namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others for
// U+0100 onwards in byte order.
std::array<uint32_t, 256> byte_to_codepoint() {
  std::array<uint32_t, 256> map{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    map[b] = printable ? b : next++;
  }
  return map;
}

}  // namespace

void load_bpe(Tokenizer::Impl& t, const GgufFile& file) {
  t.pretokenizer = std::make_unique<PreTokenizer>(t.pre_name);
  const int32_t n = t.n_vocab();

  // Symbols beyond the vocabulary (a merge part or result that is not a token) get ids from
  // n_vocab on.
  auto intern = [&](std::string_view s) -> int32_t {
    int32_t id = t.index.get(s);
    if (id >= 0) return id;
    t.extra_strings.emplace_back(s);
    id = n + static_cast<int32_t>(t.extra_strings.size() - 1);
    t.index.put(t.extra_strings.back(), id);
    return id;
  };

  const auto cps = byte_to_codepoint();
  t.codepoint_byte.fill(-1);
  for (int b = 0; b < 256; ++b) {
    t.codepoint_byte[cps[b]] = static_cast<int16_t>(b);
    std::string ch;
    utf8_append(ch, cps[b]);
    t.byte_symbol[b] = intern(ch);
  }

  auto merges = file.get_string_array("tokenizer.ggml.merges");
  if (merges.empty())
    throw GgufError(file.path().string() + ": BPE vocabulary without tokenizer.ggml.merges");
  t.merges.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    std::string_view m = merges[rank];
    size_t sp = m.find(' ', 1);
    if (sp == std::string_view::npos) continue;
    std::string_view left = m.substr(0, sp), right = m.substr(sp + 1);
    joined.assign(left);
    joined += right;
    int32_t l = intern(left), r = intern(right), res = intern(joined);
    t.merges.insert(l, r, {static_cast<int32_t>(rank), res});
  }
}

namespace {

// Working memory of encode_bpe, kept per thread so that short texts (one line per keystroke)
// allocate nothing. Everything is reset at the start of each call.
struct BpeScratch {
  std::vector<std::string_view> words;
  std::vector<BpeSymbol> symbols;
  std::vector<BpeBigram> heap;
  std::string encoded;
  // Words repeat a lot in source code: each distinct word of this call, with where its
  // tokens were first written to the output.
  struct Slot {
    std::string_view word;
    uint32_t begin, count;
    bool used;
  };
  std::vector<Slot> slots;
  std::vector<uint32_t> used_slots;
  size_t mask = 0;

  void reset(size_t expected_words) {
    for (uint32_t i : used_slots) slots[i].used = false;
    used_slots.clear();
    size_t cap = 256;
    while (cap < expected_words * 2) cap <<= 1;
    if (cap > slots.size()) {
      slots.assign(cap, Slot{});
      mask = cap - 1;
    }
  }
  Slot* find(std::string_view word, size_t hash) {
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      if (!slots[i].used) return &slots[i];
      if (slots[i].word == word) return &slots[i];
    }
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots);
    slots.assign(old.size() * 2, Slot{});
    mask = slots.size() - 1;
    used_slots.clear();
    for (const Slot& s : old) {
      if (!s.used) continue;
      Slot* d = find(s.word, std::hash<std::string_view>{}(s.word));
      *d = s;
      used_slots.push_back(static_cast<uint32_t>(d - slots.data()));
    }
  }
};

}  // namespace

void Tokenizer::Impl::encode_bpe(std::string_view text, std::vector<int32_t>& out) const {
  thread_local BpeScratch scratch;
  BpeScratch& s = scratch;
  s.words.clear();
  pretokenizer->split(text, s.words);
  s.reset(s.words.size() / 4);

  for (std::string_view word : s.words) {
    const size_t hash = std::hash<std::string_view>{}(word);
    BpeScratch::Slot* slot = s.find(word, hash);
    if (slot->used) {
      for (uint32_t k = 0; k < slot->count; ++k) {
        const int32_t id = out[slot->begin + k];
        out.push_back(id);
      }
      continue;
    }
    const size_t out_start = out.size();
    bpe_word(word, out, s.symbols, s.heap, s.encoded);
    *slot = {word, static_cast<uint32_t>(out_start), static_cast<uint32_t>(out.size() - out_start),
             true};
    s.used_slots.push_back(static_cast<uint32_t>(slot - s.slots.data()));
    if (s.used_slots.size() * 2 > s.slots.size()) s.grow();
  }
}

void Tokenizer::Impl::bpe_word(std::string_view word, std::vector<int32_t>& out,
                               std::vector<BpeSymbol>& symbols, std::vector<BpeBigram>& heap,
                               std::string& encoded) const {
  if (pretokenizer->ignore_merges()) {
    encoded.clear();
    for (char c : word) encoded += symbol_text(byte_symbol[static_cast<unsigned char>(c)]);
    if (int32_t id = find(encoded); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  symbols.clear();
  heap.clear();
  const int32_t len = static_cast<int32_t>(word.size());
  for (int32_t i = 0; i < len; ++i)
    symbols.push_back(
        {byte_symbol[static_cast<unsigned char>(word[i])], i - 1, i + 1 < len ? i + 1 : -1});
  auto add_bigram = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const MergeTable::Merge* m = merges.find(symbols[left].id, symbols[right].id);
    if (!m) return;
    heap.push_back({m->rank, left, right, symbols[left].id, symbols[right].id, m->result});
    std::push_heap(heap.begin(), heap.end(), BpeBigramAfter{});
  };
  for (int32_t i = 1; i < len; ++i) add_bigram(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BpeBigramAfter{});
    BpeBigram b = heap.back();
    heap.pop_back();
    BpeSymbol& l = symbols[b.left];
    BpeSymbol& r = symbols[b.right];
    if (l.id != b.left_id || r.id != b.right_id || l.id < 0 || r.id < 0) continue;
    l.id = b.result;
    r.id = -1;  // merged away
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    add_bigram(l.prev, b.left);
    add_bigram(b.left, l.next);
  }
  for (int32_t i = 0; i >= 0 && i < len; i = symbols[i].next) {
    int32_t sid = symbols[i].id;
    if (sid < n_vocab()) {
      out.push_back(sid);
      continue;
    }
    // Not a token: llama.cpp falls back to the single bytes of the symbol's text that are
    // tokens themselves.
    for (char c : symbol_text(sid))
      if (int32_t id = find(std::string_view(&c, 1)); id >= 0) out.push_back(id);
  }
}

}  // namespace ghostline::engine
