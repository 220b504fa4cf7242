// The memory around a completer: what is remembered, what is recalled without the inner
// completer, and the follow-up proposed for idle time.
#include "daemon/pipeline/memo_completer.h"

#include <gtest/gtest.h>

namespace ghostline::daemon {
namespace {

class FixedCompleter : public lsp::Completer {
 public:
  explicit FixedCompleter(std::string text) : text_(std::move(text)) {}
  lsp::CompletionResult complete(const lsp::CompletionRequest& r,
                                 const lsp::CancelToken&) override {
    ++calls;
    return {text_, r.cursor, r.cursor, {}};
  }
  std::string describe() const override { return "fixed"; }
  int calls = 0;

 private:
  std::string text_;
};

lsp::CompletionRequest at(std::string text, size_t cursor) {
  lsp::CompletionRequest r;
  r.uri = "file:///a.py";
  r.text = std::move(text);
  r.cursor = cursor;
  return r;
}

TEST(MemoCompleter, TypingThroughIsAnsweredWithoutTheInnerCompleter) {
  auto inner = std::make_unique<FixedCompleter>("return x");
  auto* fixed = inner.get();
  MemoCompleter memo(std::move(inner), true);
  lsp::CancelToken token;
  EXPECT_EQ(memo.complete(at("f(x):\n  \n", 8), token).insert_text, "return x");
  auto recalled = memo.recall(at("f(x):\n  ret\n", 11));
  ASSERT_TRUE(recalled);
  EXPECT_EQ(recalled->insert_text, "urn x");
  EXPECT_EQ(recalled->replace_begin, 11u);
  EXPECT_EQ(recalled->stats.value("fromMemory", false), true);
  // Queued behind the work that made it: answered on the engine thread, still without a call.
  EXPECT_EQ(memo.complete(at("f(x):\n  re\n", 10), token).insert_text, "turn x");
  EXPECT_EQ(fixed->calls, 1);
  EXPECT_EQ(memo.inner_calls(), 1u);
}

TEST(MemoCompleter, EachSessionsDocumentHasItsOwnMemoryForgottenOnClose) {
  MemoCompleter memo(std::make_unique<FixedCompleter>("return x"), true);
  lsp::CancelToken token;
  auto in = [](std::string key, std::string text, size_t cursor) {
    auto r = at(std::move(text), cursor);
    r.document_key = std::move(key);
    return r;
  };
  memo.complete(in("1\nfile:///a.py", "f(x):\n  \n", 8), token);
  // Another editor with the same file open does not see this editor's completions.
  EXPECT_FALSE(memo.recall(in("2\nfile:///a.py", "f(x):\n  ret\n", 11)));
  EXPECT_TRUE(memo.recall(in("1\nfile:///a.py", "f(x):\n  ret\n", 11)));
  memo.document_closed("1\nfile:///a.py");
  EXPECT_FALSE(memo.recall(in("1\nfile:///a.py", "f(x):\n  ret\n", 11)));
}

TEST(MemoCompleter, CancelledRunsAreNotRemembered) {
  MemoCompleter memo(std::make_unique<FixedCompleter>("partial"), true);
  lsp::CancelToken token;
  token.cancel();
  memo.complete(at("ab", 2), token);
  EXPECT_FALSE(memo.recall(at("ab", 2)));
}

TEST(MemoCompleter, FollowUpIsTheStateAfterAcceptingTheCompletion) {
  MemoCompleter memo(std::make_unique<FixedCompleter>("x = 1\n"), true);
  auto request = at("a\nb", 2);
  lsp::CompletionResult result{"x = 1\n", 2, 2, {}};
  auto next = memo.follow_up(request, result);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->text, "a\nx = 1\nb");
  EXPECT_EQ(next->cursor, 8u);
  EXPECT_FALSE(memo.follow_up(request, lsp::CompletionResult{"", 2, 2, {}}));
  MemoCompleter without(std::make_unique<FixedCompleter>("x"), false);
  EXPECT_FALSE(without.follow_up(request, result));
}

// Its follow-up is the context a deadline cut from the prompt.
class CuttingCompleter : public FixedCompleter {
 public:
  using FixedCompleter::FixedCompleter;
  std::optional<lsp::CompletionRequest> follow_up(const lsp::CompletionRequest& r,
                                                  const lsp::CompletionResult&) override {
    if (r.context_only) return std::nullopt;
    lsp::CompletionRequest fill = r;
    fill.context_only = true;
    return fill;
  }
};

TEST(MemoCompleter, FillingCutContextGoesBeforeThePrefetchAndBypassesTheMemory) {
  auto inner = std::make_unique<CuttingCompleter>("x = 1\n");
  auto* cutting = inner.get();
  MemoCompleter memo(std::move(inner), true);
  lsp::CancelToken token;
  auto request = at("a\nb", 2);
  auto result = memo.complete(request, token);
  auto next = memo.follow_up(request, result);
  ASSERT_TRUE(next);
  EXPECT_TRUE(next->context_only);
  EXPECT_EQ(next->text, "a\nb");
  EXPECT_EQ(next->cursor, 2u);
  // The memory could answer this request, but filling context is the inner completer's work.
  EXPECT_TRUE(memo.recall(request));
  memo.complete(*next, token);
  EXPECT_EQ(cutting->calls, 2);
  // After the fill, the state after accepting the completion.
  auto after = memo.follow_up(*next, result);
  ASSERT_TRUE(after);
  EXPECT_FALSE(after->context_only);
  EXPECT_EQ(after->text, "a\nx = 1\nb");
}

}  // namespace
}  // namespace ghostline::daemon
