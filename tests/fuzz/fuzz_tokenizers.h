// The tokenizers of the shared reference vocabularies, loaded once per fuzz process (from the
// project root, as the tests run).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::fuzz {

struct NamedTokenizer {
  std::string name;
  std::unique_ptr<engine::Tokenizer> tokenizer;
};

// BPE (gpt-2, starcoder, deepseek-coder, qwen2.5-coder) and SentencePiece (llama-spm).
inline const std::vector<NamedTokenizer>& shared_tokenizers() {
  static const std::vector<NamedTokenizer> all = [] {
    std::vector<NamedTokenizer> out;
    for (const char* name :
         {"gpt-2", "starcoder", "deepseek-coder", "qwen2.5-coder", "llama-spm"}) {
      auto file = engine::GgufFile::open(std::string("../shared/data/tokenizer/") + name + ".gguf");
      out.push_back({name, engine::Tokenizer::from_gguf(*file)});
    }
    return out;
  }();
  return all;
}

}  // namespace ghostline::fuzz
