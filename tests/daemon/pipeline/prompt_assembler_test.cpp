// Prompt assembly while typing: consecutive prompts share their leading tokens, segments are
// tokenized once, and limits hold.
#include "daemon/pipeline/prompt_assembler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {
namespace {

class PromptAssemblerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    file_ = engine::GgufFile::open("../shared/data/tokenizer/deepseek-coder.gguf").release();
    tokenizer_ = engine::Tokenizer::from_gguf(*file_).release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete file_;
  }
  // A real source file of this project, several times over: larger than the prompt window.
  static std::string large_source() {
    std::ifstream in("lsp/session.cpp");
    std::stringstream s;
    s << in.rdbuf();
    return s.str() + s.str() + s.str();
  }
  static size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return i;
  }
  static inline engine::GgufFile* file_ = nullptr;
  static inline engine::Tokenizer* tokenizer_ = nullptr;
};

TEST_F(PromptAssemblerTest, HasFimTokens) {
  FimTokens fim = engine::fim_tokens(*tokenizer_);
  EXPECT_GE(fim.pre, 0);
  EXPECT_GE(fim.suf, 0);
  EXPECT_GE(fim.mid, 0);
  EXPECT_FALSE(fim.stop.empty());
}

// Types a line in the middle of a large file, one character per keystroke, and returns the
// tokens each prompt would prefill after the previous one (prompt length - common prefix).
std::vector<size_t> type_line(PromptAssembler& a, std::string text, size_t cursor,
                              std::string_view typed, const PromptLimits& limits,
                              std::vector<Prompt>* prompts) {
  std::vector<size_t> changed;
  std::vector<int32_t> previous;
  for (char c : typed) {
    text.insert(cursor++, 1, c);
    Prompt p = a.build(text, cursor, limits);
    size_t common = 0;
    while (common < previous.size() && common < p.tokens.size() &&
           previous[common] == p.tokens[common])
      ++common;
    if (!previous.empty()) changed.push_back(p.tokens.size() - common);
    previous = p.tokens;
    prompts->push_back(std::move(p));
  }
  return changed;
}

TEST_F(PromptAssemblerTest, SpmKeystrokesChangeOnlyTheEnd) {
  std::string text = large_source();
  size_t cursor = text.find('\n', text.size() / 2) + 1;
  PromptAssembler a(*tokenizer_, engine::fim_tokens(*tokenizer_), FimMode::Spm);
  PromptLimits limits{1024, 128};
  std::vector<Prompt> prompts;
  auto changed =
      type_line(a, text, cursor, "  auto result = compute_value(x, y);", limits, &prompts);
  double mean = 0;
  for (size_t c : changed) mean += c;
  mean /= changed.size();
  EXPECT_LE(mean, 4.0);
  for (const auto& p : prompts) {
    EXPECT_EQ(p.mode, FimMode::Spm);
    EXPECT_LE(p.prefix_tokens, limits.max_prefix_tokens);
    EXPECT_LE(p.suffix_tokens, limits.max_suffix_tokens);
    EXPECT_TRUE(p.truncated);
  }
  // After the first keystroke only the cursor's line is tokenized again.
  EXPECT_EQ(prompts.back().segments_tokenized, 2);  // the line before and after the cursor
}

TEST_F(PromptAssemblerTest, PsmKeystrokesRecomputeAtMostTheSuffix) {
  std::string text = large_source();
  size_t cursor = text.find('\n', text.size() / 2) + 1;
  PromptAssembler a(*tokenizer_, engine::fim_tokens(*tokenizer_), FimMode::Psm);
  PromptLimits limits{1024, 64};
  std::vector<Prompt> prompts;
  auto changed = type_line(a, text, cursor, "for (int i = 0; i < n; ++i) {", limits, &prompts);
  for (size_t i = 0; i < changed.size(); ++i)
    EXPECT_LE(changed[i], static_cast<size_t>(prompts[i + 1].suffix_tokens) + 6) << i;
}

// PSM models with a file separator: the text after the cursor's neighbourhood goes before the
// prefix as another file's context, so a keystroke recomputes only the typed text and a short
// local suffix, and the far suffix stays the same while the user types.
TEST(PromptAssemblerFarSuffix, PsmKeystrokesRecomputeOnlyTheLocalSuffix) {
  auto file = engine::GgufFile::open("../shared/data/tokenizer/starcoder.gguf");
  auto tok = engine::Tokenizer::from_gguf(*file);
  const FimTokens fim = engine::fim_tokens(*tok);
  ASSERT_GE(fim.file_sep, 0);
  PromptAssembler a(*tok, fim, FimMode::Psm);
  // A real source file of this project, twice over: the far suffix has text to hold whatever
  // the file's own length.
  std::ifstream in("lsp/session.cpp");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  text += text;
  size_t cursor = text.find('\n', text.size() / 2) + 1;
  const PromptLimits limits;
  Prompt before = a.build(text, cursor, limits);
  ASSERT_GT(before.far_suffix_tokens, 100);
  EXPECT_EQ(before.tokens[fim.add_bos ? 1 : 0], fim.file_sep);
  for (char c : std::string("if (x) {")) {
    text.insert(cursor++, 1, c);
    Prompt p = a.build(text, cursor, limits);
    EXPECT_EQ(p.far_suffix_tokens, before.far_suffix_tokens);
    size_t same = 0;
    while (same < p.tokens.size() && same < before.tokens.size() &&
           p.tokens[same] == before.tokens[same])
      ++same;
    // What changes: the cursor's line from the typed character on, the local suffix, <mid>.
    EXPECT_LE(p.tokens.size() - same, static_cast<size_t>(limits.max_local_suffix_tokens) + 4) << c;
    before = std::move(p);
  }
}

TEST_F(PromptAssemblerTest, SmallFileHasItAllAndNoTruncation) {
  PromptAssembler a(*tokenizer_, engine::fim_tokens(*tokenizer_), FimMode::Psm);
  std::string text = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n";
  size_t cursor = text.find("a + b");
  Prompt p = a.build(text, cursor, {});
  EXPECT_FALSE(p.truncated);
  FimTokens fim = engine::fim_tokens(*tokenizer_);
  ASSERT_GE(p.tokens.size(), 3u);
  EXPECT_EQ(p.tokens.front(), fim.add_bos ? fim.bos : fim.pre);
  EXPECT_EQ(p.tokens.back(), fim.mid);
  std::vector<int32_t> visible;
  for (int32_t t : p.tokens)
    if (!tokenizer_->is_control(t)) visible.push_back(t);
  EXPECT_EQ(tokenizer_->decode(visible), text.substr(0, cursor) + text.substr(cursor));
}

}  // namespace
}  // namespace ghostline::daemon
