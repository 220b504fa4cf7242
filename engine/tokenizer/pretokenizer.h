// Splits text into the words that byte-level BPE merges within, as llama.cpp does for each
// value of tokenizer.ggml.pre: a list of regexes applied in turn, each one splitting the pieces
// left by the previous one into its matches and the text between them.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

namespace ghostline::engine {

class PreTokenizer {
 public:
  // Throws std::runtime_error for a name this build does not know.
  explicit PreTokenizer(std::string_view name);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Appends the words of `text` (views into it, covering it exactly, in order). Bytes that are
  // not valid UTF-8 form words of their own, so that they survive byte-level encoding.
  void split(std::string_view text, std::vector<std::string_view>& words) const;

  // Whether a word that is itself a vocabulary token is emitted without merging (llama-bpe).
  bool ignore_merges() const { return ignore_merges_; }

  // What a cut right after a newline needs so that splitting there is exact.
  enum class NewlineCut {
    kAlways,            // the first regex isolates every newline
    kBeforeNonSpace,    // the next character must not be whitespace
    kBetweenNonSpaces,  // neither the next nor the previous character may be whitespace
  };
  NewlineCut newline_cut() const { return newline_cut_; }

  // The regexes used for a name (as written in llama.cpp), for tests and diagnostics.
  static std::vector<std::string_view> regexes_for(std::string_view name);

 private:
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes_;
  bool ignore_merges_ = false;
  NewlineCut newline_cut_ = NewlineCut::kBetweenNonSpaces;
};

}  // namespace ghostline::engine
