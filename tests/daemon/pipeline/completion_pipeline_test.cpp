// The pipeline's stages around a scripted Generate: what the editor-side stages do with what
// any backend generates, without a model file.
#include "daemon/pipeline/completion_pipeline.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ghostline::daemon {
namespace {

// Generates `pieces` in order, each through the stop rules, as a stream would.
class ScriptedGenerate : public Generate {
 public:
  explicit ScriptedGenerate(std::vector<std::string> pieces, bool sees_suffix = true)
      : pieces_(std::move(pieces)), sees_suffix_(sees_suffix) {}

  bool sees_suffix() const override { return sees_suffix_; }
  void prompt(PipelineRequest& q) override {
    ++prompts;
    q.prompt.tokens = {1, 2, 3};
    q.prompt.mode = engine::FimMode::Psm;
  }
  void match(PipelineRequest&) override { ++matches; }
  Generated generate(PipelineRequest& q, syntax::StopRules& rules, const lsp::CancelToken& cancel,
                     const AnswerEarlyText& answer_early_text) override {
    Generated g;
    g.through_rules = true;
    g.stop = engine::StopReason::StopToken;
    for (size_t i = 0; i < pieces_.size(); ++i) {
      if (cancel.cancelled()) {
        g.stop = engine::StopReason::Cancelled;
        break;
      }
      if (i == answer_early_after && answer_early_text)
        answer_early_text(g.text, static_cast<int>(i));
      g.text += pieces_[i];
      q.stats.generated_tokens = static_cast<int>(i + 1);
      if (rules.append(pieces_[i])) {
        g.stop = engine::StopReason::Callback;
        break;
      }
    }
    seen = g.text;
    return g;
  }
  std::string describe() const override { return "scripted"; }
  std::string model_name() const override { return "scripted"; }

  int prompts = 0, matches = 0;
  size_t answer_early_after = SIZE_MAX;
  std::string seen;  // what went through the stop rules

 private:
  std::vector<std::string> pieces_;
  bool sees_suffix_;
};

lsp::CompletionRequest request(std::string text, size_t cursor) {
  lsp::CompletionRequest r;
  r.uri = "file:///t.py";
  r.language_id = "python";
  r.text = std::move(text);
  r.cursor = cursor;
  return r;
}

TEST(CompletionPipeline, NothingToCompleteTakesNoModelTime) {
  ScriptedGenerate generate({"x"});
  const auto r = request("value = total\n", 9);  // in the middle of a word
  PipelineRequest q(r, 1000, 16);
  lsp::CancelToken never;
  const auto result = run_pipeline(generate, q, never, nullptr);
  EXPECT_EQ(generate.prompts, 0);
  EXPECT_EQ(generate.matches, 0);
  EXPECT_TRUE(result.insert_text.empty());
  EXPECT_EQ(result.stats.at("decision"), "none");
  EXPECT_EQ(result.stats.at("decisionReason"), "in the middle of a word");
}

TEST(CompletionPipeline, StopRulesSeeEachPieceAndEndASingleLineCompletion) {
  ScriptedGenerate generate({"n ", "for n in xs", "]\n", "print(1)\n", "never reached"});
  const auto r = request("ys = [", 6);
  PipelineRequest q(r, 1000, 16);
  lsp::CancelToken never;
  const auto result = run_pipeline(generate, q, never, nullptr);
  EXPECT_EQ(generate.prompts, 1);
  EXPECT_EQ(generate.matches, 1);
  EXPECT_EQ(generate.seen.find("never reached"), std::string::npos) << generate.seen;
  EXPECT_EQ(result.insert_text,
            syntax::finish_completion(q.context.shape, generate.seen, /*cut_short=*/false));
  EXPECT_FALSE(result.insert_text.empty());
  EXPECT_EQ(result.stats.at("stop"), "stop_rule");
  EXPECT_EQ(result.stats.at("generatedText"), generate.seen);
  EXPECT_EQ(result.stats.at("promptTokens"), 3);
  EXPECT_EQ(result.stats.at("fim"), "psm");
  EXPECT_EQ(result.stats.at("backend"), "local");
  for (const char* stage : {"context", "prompt", "cacheMatch", "generate", "postProcess"})
    EXPECT_GE(result.stats.at("stagesMs").at(stage).get<double>(), 0) << stage;
}

TEST(CompletionPipeline, PostProcessCutsWhatTheSuffixAlreadyHas) {
  // The model writes the closing parenthesis that is already after the cursor.
  ScriptedGenerate generate({"1, 2)"});
  const auto r = request("f(0, )\n", 5);
  PipelineRequest q(r, 1000, 16);
  lsp::CancelToken never;
  const auto result = run_pipeline(generate, q, never, nullptr);
  const syntax::FinishedCompletion done = syntax::finish(q.context.shape, "1, 2)");
  EXPECT_EQ(result.insert_text, done.text);
  EXPECT_EQ(result.replace_begin, 5u);
  EXPECT_EQ(result.replace_end, 5u + done.replace_after);
}

TEST(CompletionPipeline, AnswersEarlyWithTheTextReadySoFar) {
  ScriptedGenerate generate({"total", " += ", "x", "\n"});
  generate.answer_early_after = 2;
  const auto r = request("for x in xs:\n    ", 17);
  PipelineRequest q(r, 1000, 16);
  lsp::CancelToken never;
  std::vector<lsp::CompletionResult> early;
  const auto result = run_pipeline(generate, q, never,
                                   [&](const lsp::CompletionResult& partial) {
                                     early.push_back(partial);
                                   });
  ASSERT_EQ(early.size(), 1u);
  EXPECT_EQ(early[0].stats.at("answeredEarly"), true);
  EXPECT_EQ(early[0].stats.at("generatedTokens"), 2);
  EXPECT_EQ(early[0].insert_text,
            syntax::finish_completion(q.context.shape, "total += ", /*cut_short=*/true));
  EXPECT_EQ(result.insert_text,
            syntax::finish_completion(q.context.shape, "total += x\n", /*cut_short=*/false));
}

TEST(CompletionPipeline, ACancelledRequestShowsNothing) {
  ScriptedGenerate generate({"a", "b"});
  const auto r = request("x = ", 4);
  PipelineRequest q(r, 1000, 16);
  lsp::CancelToken cancel;
  cancel.cancel();
  const auto result = run_pipeline(generate, q, cancel, nullptr);
  EXPECT_TRUE(result.insert_text.empty());
  EXPECT_EQ(result.stats.at("stop"), "cancelled");
}

TEST(CompletionPipeline, LimitsComeFromTheRequestElseTheDefaults) {
  auto r = request("x = ", 4);
  EXPECT_EQ(PipelineRequest(r, 500, 32).deadline_ms, 500);
  EXPECT_EQ(PipelineRequest(r, 500, 32).max_tokens, 32);
  r.deadline_ms = 80;
  r.max_tokens = 8;
  EXPECT_EQ(PipelineRequest(r, 500, 32).deadline_ms, 80);
  EXPECT_EQ(PipelineRequest(r, 500, 32).max_tokens, 8);
}

TEST(CompletionStats, RemoteStatsNameTheStreamAndNotTheLocalCache) {
  CompletionStats s;
  s.backend = CompletionStats::Backend::Remote;
  s.remote = CompletionStats::RemoteStream{.api = "openai", .events = 3, .text_events = 2};
  s.stop = engine::StopReason::MaxTokens;
  const auto j = s.to_json();
  EXPECT_EQ(j.at("backend"), "remote");
  EXPECT_EQ(j.at("api"), "openai");
  EXPECT_EQ(j.at("events"), 3);
  EXPECT_EQ(j.at("textEvents"), 2);
  EXPECT_EQ(j.at("stop"), "max_tokens");
  EXPECT_FALSE(j.contains("cache"));
  EXPECT_FALSE(j.contains("matchedTokens"));
  EXPECT_FALSE(j.contains("remoteSkipped"));
}

}  // namespace
}  // namespace ghostline::daemon
