// Segment-wise prompt tokenization gives the tokens of the whole prefix: no space inserted at
// segment starts by SentencePiece vocabularies, and cuts where the tokenizer says they are exact.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "daemon/pipeline/prompt_assembler.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {
namespace {

TEST(PromptSegments, PrefixTokensEqualTheWholePrefixEncoded) {
  std::ifstream in("engine/gguf/gguf_file.cpp");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  text.resize(6000);
  const size_t cursor = text.rfind("\n    ") + 5;  // inside an indented line
  for (const char* name : {"llama-spm", "deepseek-coder", "starcoder"}) {
    SCOPED_TRACE(name);
    auto file = engine::GgufFile::open(std::string("../shared/data/tokenizer/") + name + ".gguf");
    auto tok = engine::Tokenizer::from_gguf(*file);
    FimTokens fim = engine::fim_tokens(*tok);
    PromptAssembler a(*tok, fim, FimMode::Psm);
    PromptLimits limits;
    limits.max_prefix_tokens = 100000;
    limits.max_far_suffix_tokens = 0;  // the suffix only after the prefix
    Prompt p = a.build(text, cursor, limits);
    EXPECT_GT(p.segments, 4);
    std::vector<int32_t> visible;
    for (int32_t t : p.tokens)
      if (!tok->is_control(t)) visible.push_back(t);
    std::string prefix = text.substr(0, cursor), suffix = text.substr(cursor);
    // The prefix, then as much of the suffix as fits its limit.
    const std::string shown = tok->decode(visible);
    ASSERT_GE(shown.size(), prefix.size());
    EXPECT_TRUE(shown.compare(0, prefix.size(), prefix) == 0) << "prefix differs";
    EXPECT_TRUE(suffix.compare(0, shown.size() - prefix.size(), shown, prefix.size()) == 0)
        << "suffix differs";
    // The prefix's tokens are the prefix encoded whole wherever the segment cuts are exact; the
    // cut before the cursor's line is exact for these two vocabularies.
    if (std::string(name) != "starcoder") {
      auto whole = tok->encode(prefix);
      ASSERT_GE(visible.size(), whole.size());
      EXPECT_EQ(std::vector<int32_t>(visible.begin(), visible.begin() + whole.size()), whole);
    }
  }
}

}  // namespace
}  // namespace ghostline::daemon
