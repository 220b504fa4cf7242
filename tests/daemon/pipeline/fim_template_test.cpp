// FIM templates per model family: the family is told from the vocabulary's special tokens, and
// the prompt for one cursor is exactly the family's documented layout (golden strings).
#include <gtest/gtest.h>

#include <string>

#include "daemon/pipeline/prompt_assembler.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/fim.h"
#include "engine/tokenizer/tokenizer.h"

namespace ghostline::daemon {
namespace {

struct Vocab {
  std::unique_ptr<engine::GgufFile> file;
  std::unique_ptr<engine::Tokenizer> tokenizer;
  explicit Vocab(const std::string& name)
      : file(engine::GgufFile::open("../shared/data/tokenizer/" + name)),
        tokenizer(engine::Tokenizer::from_gguf(*file)) {}
};

// The prompt as text, control tokens by their names.
std::string render(const engine::Tokenizer& tok, const std::vector<int32_t>& tokens) {
  std::string out;
  std::vector<int32_t> run;
  auto flush = [&] {
    out += tok.decode_continuation(run);
    run.clear();
  };
  for (int32_t t : tokens) {
    if (tok.is_control(t)) {
      flush();
      out += tok.token_text(t);
    } else {
      run.push_back(t);
    }
  }
  flush();
  return out;
}

const std::string kText = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n";
const size_t kCursor = kText.find("a + b");
const std::vector<syntax::FileContext> kOtherFiles = {
    {"util/math.py", "def mul(a, b):\n    return a * b"}};

TEST(FimTemplate, QwenCoderHasRepositoryLevelContext) {
  Vocab v("qwen2.5-coder.gguf");
  const auto t = engine::fim_template(*v.tokenizer, /*spm=*/false, /*ghostline_metadata=*/false);
  EXPECT_EQ(t.family, engine::FimFamily::QwenCoder);
  EXPECT_EQ(t.mode, engine::FimMode::Psm);
  ASSERT_TRUE(t.repo_context);
  PromptAssembler a(*v.tokenizer, t);
  const Prompt p = a.build(kText, kCursor, PromptLimits{}, kOtherFiles, "demo");
  EXPECT_EQ(p.other_files, 1);
  EXPECT_EQ(render(*v.tokenizer, p.tokens),
            "<|repo_name|>demo\n"
            "<|file_sep|>util/math.py\ndef mul(a, b):\n    return a * b\n"
            "<|fim_prefix|>def add(a, b):\n    return <|fim_suffix|>a + b\n\nprint(add(1, "
            "2))\n<|fim_middle|>");
}

TEST(FimTemplate, StarCoderHasRepositoryLevelContext) {
  Vocab v("starcoder.gguf");
  const auto t = engine::fim_template(*v.tokenizer, false, false);
  EXPECT_EQ(t.family, engine::FimFamily::StarCoder);
  ASSERT_TRUE(t.repo_context);
  PromptAssembler a(*v.tokenizer, t);
  const Prompt p = a.build(kText, kCursor, PromptLimits{}, kOtherFiles, "demo");
  EXPECT_EQ(
      render(*v.tokenizer, p.tokens),
      "<repo_name>demo"
      "<file_sep>util/math.py\ndef mul(a, b):\n    return a * b\n"
      "<fim_prefix>def add(a, b):\n    return <fim_suffix>a + b\n\nprint(add(1, 2))\n<fim_middle>");
}

TEST(FimTemplate, DeepSeekCoderSeesTheCurrentFileOnly) {
  Vocab v("deepseek-coder.gguf");
  const auto t = engine::fim_template(*v.tokenizer, false, false);
  EXPECT_EQ(t.family, engine::FimFamily::DeepSeekCoder);
  EXPECT_FALSE(t.repo_context);
  PromptAssembler a(*v.tokenizer, t);
  const Prompt p = a.build(kText, kCursor, PromptLimits{}, kOtherFiles, "demo");
  EXPECT_EQ(p.other_files, 0);
  EXPECT_EQ(render(*v.tokenizer, p.tokens),
            std::string(v.tokenizer->token_text(*v.tokenizer->specials().bos)) +
                "<｜fim▁begin｜>def add(a, b):\n    return <｜fim▁hole｜>a + b\n\nprint(add(1, "
                "2))\n<｜fim▁end｜>");
}

TEST(FimTemplate, SpmPutsTheSuffixFirst) {
  Vocab v("qwen2.5-coder.gguf");
  const auto t = engine::fim_template(*v.tokenizer, /*spm=*/true, /*ghostline_metadata=*/true);
  EXPECT_EQ(t.family, engine::FimFamily::Ghostline);
  EXPECT_FALSE(t.repo_context);  // our model is trained on single files
  PromptAssembler a(*v.tokenizer, t);
  const Prompt p = a.build(kText, kCursor, PromptLimits{}, kOtherFiles, "demo");
  EXPECT_EQ(render(*v.tokenizer, p.tokens),
            "<|fim_suffix|>a + b\n\nprint(add(1, 2))\n<|fim_prefix|>def add(a, b):\n    return "
            "<|fim_middle|>");
}

TEST(FimTemplate, AVocabularyWithoutFimTokensIsPrefixOnly) {
  Vocab v("gpt-2.gguf");
  const auto t = engine::fim_template(*v.tokenizer, false, false);
  EXPECT_EQ(t.family, engine::FimFamily::None);
  EXPECT_EQ(t.mode, engine::FimMode::PrefixOnly);
}

// Other files go first and change only when the context chosen changes: typing keeps them, and
// so the cached head of the prompt.
TEST(FimTemplate, OtherFilesStayPutWhileTyping) {
  Vocab v("qwen2.5-coder.gguf");
  PromptAssembler a(*v.tokenizer, engine::fim_template(*v.tokenizer, false, false));
  std::string text = kText;
  size_t cursor = kCursor;
  const Prompt first = a.build(text, cursor, PromptLimits{}, kOtherFiles, "demo");
  text.insert(cursor, "b");
  const Prompt second = a.build(text, cursor + 1, PromptLimits{}, kOtherFiles, "demo");
  ASSERT_GT(first.other_files_tokens, 0);
  EXPECT_TRUE(std::equal(first.tokens.begin(), first.tokens.begin() + first.other_files_tokens,
                         second.tokens.begin()));
}

}  // namespace
}  // namespace ghostline::daemon
