// Tokenizers of GGUF models: byte-level BPE ("gpt2") with the pre-tokenizer named by
// tokenizer.ggml.pre, and SentencePiece ("llama") with byte fallback. Both reproduce
// llama.cpp's token ids exactly.
//
// Segment-wise encoding: the prompt assembler may tokenize a text in segments (encode() for
// the first, encode_continuation() for the others, which for SentencePiece does not insert the
// leading "▁") and concatenate the ids. Decoding them always gives back the concatenated text.
// The ids are the same as encoding the whole text when every cut is one that
// splits_exactly_at() accepts: right after a newline, with conditions on the neighbouring
// characters that depend on the pre-tokenizer (any newline for deepseek-coder and llama
// SentencePiece vocabularies; a newline followed by a non-space for llama-bpe and qwen2; a
// newline between two non-spaces for the GPT-2 family, whose "\s+(?!\S)" reads a run of
// whitespace at the end of a segment differently).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ghostline::engine {

class GgufFile;

class Tokenizer {
 public:
  // Reads the vocabulary of a GGUF file (the tokenizer copies what it needs and does not
  // reference the file afterwards). Throws GgufError or std::runtime_error with a clear message
  // for a missing or unsupported vocabulary.
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Encodes text. Special/control tokens in the text are matched only when parse_special
  // is true (file contents never are). No BOS/EOS added here. Thread-safe.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = false) const;
  // Encodes text that continues a previously encoded segment: the same as encode() except
  // that SentencePiece vocabularies do not prefix the text with a space.
  std::vector<int32_t> encode_continuation(std::string_view text, bool parse_special = false) const;
  // Inverse of encode(): the concatenated token bytes, without the space that a SentencePiece
  // encode() put in front of the text. Control tokens decode to their text; skip them with
  // is_control() when showing text to a user.
  std::string decode(std::span<const int32_t> ids) const;
  // The exact bytes of the tokens, concatenated: for tokens that continue a text, such as
  // generated ones, where a SentencePiece leading space is part of the text.
  std::string decode_continuation(std::span<const int32_t> ids) const;
  // Whether encoding text[0, pos) and text[pos, end) separately gives the ids of the whole
  // (conservative: false when unsure). pos 0 and text.size() are always exact.
  bool splits_exactly_at(std::string_view text, size_t pos) const;
  std::string_view token_text(int32_t id) const;  // the vocab string
  std::string token_bytes(int32_t id) const;      // the bytes it decodes to
  int32_t n_vocab() const;
  std::optional<int32_t> find_token(std::string_view text) const;

  // Special tokens from metadata (tokenizer.ggml.*_token_id) and, for FIM and end of turn,
  // from well-known token texts when metadata lacks them (<|fim_prefix|>, <fim_prefix>, <PRE>,
  // <｜fim▁begin｜>, ...).
  struct Specials {
    std::optional<int32_t> bos, eos, eot, pad, fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    bool add_bos = false;
  };
  const Specials& specials() const;
  // Tokens after which generation stops (sorted): EOS, EOT, every token with a well-known
  // end-of-turn text, and the FIM pad, repo and file-separator tokens.
  const std::vector<int32_t>& end_of_generation() const;
  bool is_end_of_generation(int32_t id) const;
  bool is_control(int32_t id) const;  // special/control tokens (never shown as completion text)
  std::string_view model() const;     // "gpt2" or "llama"
  std::string_view pre() const;       // pre-tokenizer name

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::vector<int32_t> encode_impl(std::string_view text, bool parse_special,
                                   bool continuation) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ghostline::engine
