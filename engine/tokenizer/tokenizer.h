// Tokenizers of GGUF models: byte-level BPE ("gpt2") with the pre-tokenizer named by
// tokenizer.ggml.pre, and SentencePiece ("llama") with byte fallback. Both reproduce
// llama.cpp's token ids exactly.
//
// Segment-wise encoding: the prompt assembler may tokenize a text in segments and concatenate
// the ids. The decoded bytes are always the concatenated text (decode for the first segment,
// token_bytes for the rest). The ids are identical to encoding the whole text when every cut
// lies on a pre-token boundary; cutting right after a newline that is followed by a
// non-whitespace character is such a boundary for every pre-tokenizer supported here (for
// deepseek-coder, llama-bpe and qwen2 any cut after a newline is). Continuation segments of a
// SentencePiece vocabulary must use encode_continuation(), which does not insert the leading
// "▁" that encode() adds at the start of a text.
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
