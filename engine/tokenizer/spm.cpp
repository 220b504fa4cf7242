// SentencePiece (BPE by scores) as llama.cpp runs it: spaces become "▁", the text is split
// into characters, and the adjacent pair whose concatenation is the highest-scoring token is
// merged first (leftmost on ties). Characters left without a token fall back to <0xNN> tokens.
#include <algorithm>
#include <cstdio>
#include <string>

#include "engine/tokenizer/tokenizer_impl.h"
#include "base/utf8.h"

namespace ghostline::engine {

void load_spm(Tokenizer::Impl& t) {
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    int32_t id = t.find(name);
    if (id < 0) id = t.find(std::string(1, static_cast<char>(b)));
    t.byte_token[b] = id;
  }
  t.spm_barrier.fill(true);
  for (int32_t id = 0; id < t.n_vocab(); ++id) {
    std::string_view s = t.text(id);
    if (s.size() < 2) continue;
    for (char c : s)
      if (static_cast<unsigned char>(c) < 128) t.spm_barrier[static_cast<unsigned char>(c)] = false;
  }
}

namespace {

struct Symbol {
  uint32_t begin, size;  // bytes of the escaped text; size 0 once merged away
  int32_t prev, next;
};

struct Bigram {
  float score;
  int32_t left, right;
  uint32_t size;  // bytes of the pair when queued; stale entries no longer match
};

// Max-heap order: highest score, then leftmost.
struct BigramBefore {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void Tokenizer::Impl::encode_spm(std::string_view raw, std::vector<int32_t>& out) const {
  std::string text;
  text.reserve(raw.size() + raw.size() / 4);
  for (char c : raw) {
    if (c == ' ')
      text += "\xe2\x96\x81";
    else
      text += c;
  }
  // Merge the stretches between barrier characters one at a time; a barrier character is a
  // stretch of its own.
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 128 && spm_barrier[c]) {
      if (i > start) encode_spm_piece(std::string_view(text).substr(start, i - start), out);
      encode_spm_piece(std::string_view(text).substr(i, 1), out);
      start = i + 1;
    }
  }
  if (start < text.size()) encode_spm_piece(std::string_view(text).substr(start), out);
}

void Tokenizer::Impl::encode_spm_piece(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    // Characters as llama.cpp splits them; a byte that does not start a valid sequence is a
    // symbol of its own, so that invalid input still round-trips through <0xNN> tokens.
    size_t n = utf8_sequence_length(text.substr(off));
    if (n == 0) n = 1;
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({static_cast<uint32_t>(off), static_cast<uint32_t>(n), index - 1,
                       off + n == text.size() ? -1 : index + 1});
    off += n;
  }

  std::vector<Bigram> heap;
  const std::string_view all = text;
  auto add_bigram = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    uint32_t size = symbols[left].size + symbols[right].size;
    int32_t id = find(all.substr(symbols[left].begin, size));
    if (id < 0) return;
    heap.push_back({scores[id], left, right, size});
    std::push_heap(heap.begin(), heap.end(), BigramBefore{});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) add_bigram(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramBefore{});
    Bigram b = heap.back();
    heap.pop_back();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.size == 0 || r.size == 0 || l.size + r.size != b.size) continue;
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    add_bigram(l.prev, b.left);
    add_bigram(b.left, l.next);
  }

  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    std::string_view piece = all.substr(symbols[i].begin, symbols[i].size);
    if (int32_t id = find(piece); id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      int32_t id = byte_token[static_cast<unsigned char>(c)];
      if (id >= 0) out.push_back(id);
    }
  }
}

}  // namespace ghostline::engine
