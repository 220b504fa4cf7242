// Internal state of Tokenizer, shared by the BPE and SentencePiece encoders.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::engine {

// GGUF token types (tokenizer.ggml.token_type).
enum class TokenType : uint8_t {
  UNDEFINED = 0,
  NORMAL = 1,
  UNKNOWN = 2,
  CONTROL = 3,
  USER_DEFINED = 4,
  UNUSED = 5,
  BYTE = 6,
};

// Open-addressing map from strings to ids. Keys are views: the owner keeps them alive. A small
// two-bit filter in front answers most failed lookups (frequent in SentencePiece, which tries
// every adjacent pair) without touching the table.
class StringIndex {
 public:
  void reserve(size_t n);
  void put(std::string_view key, int32_t value);  // inserts or overwrites
  int32_t get(std::string_view key) const;        // -1 when absent
  size_t size() const { return size_; }

 private:
  struct Slot {
    std::string_view key;
    uint64_t hash = 0;
    int32_t value = -1;
  };
  void grow();
  void rebuild_filter();
  bool may_contain(uint64_t hash) const {
    if (filter_.empty()) return true;
    uint64_t a = (hash >> 20) & filter_mask_, b = (hash >> 42) & filter_mask_;
    return (filter_[a / 64] >> (a % 64) & 1) && (filter_[b / 64] >> (b % 64) & 1);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  std::vector<uint64_t> filter_;
  uint64_t filter_mask_ = 0;
};

// Open-addressing map from a pair of symbol ids to the BPE merge they form.
class MergeTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  void reserve(size_t n);
  // Keeps the first merge inserted for a pair, as llama.cpp does.
  void insert(int32_t left, int32_t right, Merge m);
  const Merge* find(int32_t left, int32_t right) const;

 private:
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t key(int32_t l, int32_t r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }
  static size_t hash(uint64_t k) { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 17); }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// BPE merge state of one word (bpe.cpp).
struct BpeSymbol {
  int32_t id;  // symbol id (token id below n_vocab)
  int32_t prev, next;
};

struct BpeBigram {
  int32_t rank;
  int32_t left, right;
  int32_t left_id, right_id;  // symbols when queued; stale entries no longer match
  int32_t result;
};

// Min-heap order: lowest rank, then leftmost.
struct BpeBigramAfter {
  bool operator()(const BpeBigram& a, const BpeBigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

struct Tokenizer::Impl {
  enum class Kind { kBpe, kSpm };
  Kind kind = Kind::kBpe;
  std::string model_name, pre_name;

  // Token texts, concatenated; token i is arena[offsets[i], offsets[i + 1]).
  std::string arena;
  std::vector<uint32_t> offsets;
  std::vector<TokenType> types;
  std::vector<float> scores;  // SentencePiece only
  // Token texts and, for BPE, strings that occur in merges without being tokens (ids from
  // n_vocab on, texts in extra_strings).
  StringIndex index;
  std::deque<std::string> extra_strings;
  Specials specials;
  std::vector<int32_t> end_of_generation;  // sorted
  std::vector<int32_t> partition_tokens;   // control, user-defined and unknown; longest first
  bool add_space_prefix = true;            // SentencePiece
  bool newline_in_special = false;         // a special token contains a newline

  // Byte-level BPE.
  std::unique_ptr<PreTokenizer> pretokenizer;
  MergeTable merges;
  std::array<int32_t, 256> byte_symbol{};       // symbol of each byte's printable character
  std::array<int16_t, 0x144> codepoint_byte{};  // inverse of the byte-to-character map

  // SentencePiece byte fallback: <0xNN> tokens (-1 when absent).
  std::array<int32_t, 256> byte_token{};
  // ASCII bytes that occur in no token longer than one byte: no merge can cross them, so the
  // text is merged piecewise between them (same result, far smaller queues).
  std::array<bool, 128> spm_barrier{};

  int32_t n_vocab() const { return static_cast<int32_t>(types.size()); }
  std::string_view text(int32_t id) const {
    return std::string_view(arena).substr(offsets[id], offsets[id + 1] - offsets[id]);
  }
  // Text of a BPE symbol (a token or an extra string).
  std::string_view symbol_text(int32_t sid) const {
    return sid < n_vocab() ? text(sid) : std::string_view(extra_strings[sid - n_vocab()]);
  }
  int32_t find(std::string_view s) const {
    int32_t id = index.get(s);
    return id >= 0 && id < n_vocab() ? id : -1;
  }

  void append_token_bytes(int32_t id, std::string& out) const;

  // Encoders of one stretch of ordinary text (no special tokens in it).
  void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;
  void bpe_word(std::string_view word, std::vector<int32_t>& out, std::vector<BpeSymbol>& symbols,
                std::vector<BpeBigram>& heap, std::string& encoded) const;
  void encode_spm(std::string_view text, std::vector<int32_t>& out) const;
  void encode_spm_piece(std::string_view escaped, std::vector<int32_t>& out) const;
};

// Loaders (bpe.cpp, spm.cpp).
void load_bpe(Tokenizer::Impl& impl, const GgufFile& file);
void load_spm(Tokenizer::Impl& impl);

}  // namespace ghostline::engine
