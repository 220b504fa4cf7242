// Byte-level BPE as llama.cpp runs it: pre-tokenize, map every byte to a printable character
// (GPT-2's table), then merge adjacent symbols by rank, lowest rank first, leftmost on ties.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer_impl.h"
#include "engine/tokenizer/utf8.h"

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

struct Symbol {
  int32_t id;  // symbol id (token id below n_vocab)
  int32_t prev, next;
};

struct Bigram {
  int32_t rank;
  int32_t left, right;
  int32_t left_id, right_id;  // symbols when queued; stale entries no longer match
  int32_t result;
};

// Min-heap order: lowest rank, then leftmost.
struct BigramAfter {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

void Tokenizer::Impl::encode_bpe(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<std::string_view> words;
  words.reserve(text.size() / 4 + 1);
  pretokenizer->split(text, words);

  // Words repeat a lot in source code; remember each word's tokens for this call.
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;
  std::vector<int32_t> cached;
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
  std::string encoded;

  for (std::string_view word : words) {
    if (auto it = cache.find(word); it != cache.end()) {
      out.insert(out.end(), cached.begin() + it->second.first,
                 cached.begin() + it->second.first + it->second.second);
      continue;
    }
    const size_t out_start = out.size();

    if (pretokenizer->ignore_merges()) {
      encoded.clear();
      for (char c : word) encoded += symbol_text(byte_symbol[static_cast<unsigned char>(c)]);
      if (int32_t id = find(encoded); id >= 0) {
        out.push_back(id);
        goto done;
      }
    }
    {
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
        std::push_heap(heap.begin(), heap.end(), BigramAfter{});
      };
      for (int32_t i = 1; i < len; ++i) add_bigram(i - 1, i);
      while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), BigramAfter{});
        Bigram b = heap.back();
        heap.pop_back();
        Symbol& l = symbols[b.left];
        Symbol& r = symbols[b.right];
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
  done:
    cache.emplace(word, std::pair{static_cast<uint32_t>(cached.size()),
                                  static_cast<uint32_t>(out.size() - out_start)});
    cached.insert(cached.end(), out.begin() + out_start, out.end());
  }
}

}  // namespace ghostline::engine
