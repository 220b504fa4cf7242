// The completion service on a shared reference model: reusing cached KV gives exactly the
// completion a fresh computation gives, within a document and across documents.
#include "daemon/pipeline/completion_service.h"

#include <filesystem>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daemon/pipeline/syntax_context.h"
#include "engine/model/random_model.h"
#include "lsp/text_document.h"

namespace ghostline::daemon {
namespace {

constexpr const char* kModel = "../shared/data/models/ref-qwen2-dscoder-q8_0.gguf";

lsp::CompletionRequest request_at_end(std::string text) {
  lsp::CompletionRequest r;
  r.uri = "file:///t.py";
  r.cursor = text.size();
  r.text = std::move(text);
  r.max_tokens = 12;
  r.deadline_ms = 600000;  // never the stop reason here: the test compares full outputs
  return r;
}

const nlohmann::json& stats_of(const lsp::CompletionResult& r) { return r.stats; }

TEST(CompletionService, CachedKvGivesTheSameCompletionAsAFreshRun) {
  EngineOptions with_cache{.model = kModel, .threads = 1};
  EngineOptions without_cache = with_cache;
  without_cache.no_prefix_cache = true;
  auto cached = make_completion_service(with_cache);
  auto fresh = make_completion_service(without_cache);
  lsp::CancelToken never;
  const std::string head =
      "import os\n\ndef list_files(path):\n    result = []\n    for name in os.listdir(path):\n";
  std::string text = head + "        ";
  for (const char* typed : {"if", " name", ".ends", "with(\"", ".py\")"}) {
    text += typed;
    auto a = cached->complete(request_at_end(text), never);
    auto b = fresh->complete(request_at_end(text), never);
    EXPECT_EQ(a.insert_text, b.insert_text) << "after typing '" << typed << "'";
    EXPECT_EQ(stats_of(b)["matchedTokens"], 0);
  }
  // The last request reused nearly all of its prompt.
  auto again = cached->complete(request_at_end(text), never);
  auto s = stats_of(again);
  EXPECT_GE(s["matchedTokens"].get<int>(), s["promptTokens"].get<int>() - 1);
  EXPECT_GT(s["cache"]["hitRate"].get<double>(), 0.5);

  // Another document that shares the file's head reuses its KV too.
  lsp::CompletionRequest other = request_at_end(head + "        print(name)\n");
  other.uri = "file:///other.py";
  auto o = cached->complete(other, never);
  EXPECT_GT(stats_of(o)["matchedTokens"].get<int>(), 20);
  EXPECT_EQ(o.insert_text, fresh->complete(other, never).insert_text);
}

TEST(CompletionService, RequestCancelledBeforePrefillComputesNothing) {
  auto service = make_completion_service(EngineOptions{.model = kModel, .threads = 1});
  lsp::CancelToken cancelled;
  cancelled.cancel();
  std::string text = "def f():\n    return 1\n\n" + std::string(2000, '#') + "\nx = ";
  auto r = service->complete(request_at_end(text), cancelled);
  EXPECT_EQ(stats_of(r)["stop"], "cancelled");
  lsp::CancelToken never;
  auto again = service->complete(request_at_end(text), never);
  // Cancelled before its first prefill chunk: nothing computed, nothing wrongly reused.
  EXPECT_EQ(stats_of(again)["matchedTokens"], 0);
}

// Real models declare a context of 16k-32k tokens; the prefix cache must work for them with a
// KV budget far smaller than that context (here 4 MiB: 1024 blocks, 16k tokens).
TEST(CompletionService, CacheHitsOnAModelDeclaringA32kContext) {
  const auto path = std::filesystem::temp_directory_path() / "ghostline-ctx32k-test.gguf";
  engine::write_random_model(path, {.n_vocab = 512,
                                    .n_embd = 64,
                                    .n_layer = 2,
                                    .n_head = 2,
                                    .n_head_kv = 1,
                                    .n_ff = 128,
                                    .n_ctx = 32768,
                                    .type = engine::GgmlType::F32});
  auto service =
      make_completion_service(EngineOptions{.model = path.string(), .threads = 1, .kv_mib = 4});
  lsp::CancelToken never;
  std::string text = "def area(width, height):\n    return width * ";
  service->complete(request_at_end(text), never);
  text += "h";
  auto r = service->complete(request_at_end(text), never);
  const auto& s = stats_of(r);
  EXPECT_GE(s["matchedTokens"].get<int>(), s["promptTokens"].get<int>() - 8) << s.dump();
  EXPECT_GT(s["cache"]["blocks"].get<int>(), 1);
  std::filesystem::remove(path);
}

// The shipped model has a 512-token context: a small file still fits in its prompt whole,
// whatever room the template reserves for suffixes it does not use.
TEST(CompletionService, ASmallFileFitsWholeInTheShippedModelsPrompt) {
  auto service =
      make_completion_service(EngineOptions{.model = "models/ghostline-code.gguf", .threads = 1});
  std::string text =
      "def primes(limit):\n    sieve = [True] * limit\n    for n in range(2, limit):\n"
      "        if sieve[n]:\n            for m in range(n * n, limit, n):\n"
      "                sieve[m] = False\n    return [n for n in range(2, limit) if ";
  lsp::CancelToken never;
  auto r = service->complete(request_at_end(text), never);
  EXPECT_FALSE(stats_of(r)["truncated"].get<bool>()) << stats_of(r).dump();
  EXPECT_GT(stats_of(r)["promptTokens"].get<int>(), 40) << stats_of(r).dump();
}

// A prompt cut to fit the deadline is followed up in idle time by the same request with
// context_only set, which computes the whole prompt into the cache and shows nothing; the next
// keystroke there then finds all its context cached, and keeps it under the same deadline.
TEST(CompletionService, ContextCutByTheDeadlineIsFilledForTheNextKeystroke) {
  auto service = make_completion_service(EngineOptions{.model = kModel, .threads = 1});
  lsp::CancelToken never;
  std::string text;
  for (int i = 0; i < 150; ++i)
    text += "def f" + std::to_string(i) + "(x):\n    return x * " + std::to_string(i) + " + " +
            std::to_string(i * 7) + "\n\n";
  text += "def g(y):\n    return ";
  auto hurried = [](std::string t) {
    auto r = request_at_end(std::move(t));
    r.deadline_ms = 1;  // the prefill budget is its minimum, 64 tokens
    return r;
  };
  const auto request = hurried(text);
  const auto first = service->complete(request, never);
  ASSERT_TRUE(first.stats.contains("prefillBound")) << first.stats.dump();
  auto fill = service->follow_up(request, first);
  ASSERT_TRUE(fill);
  EXPECT_TRUE(fill->context_only);
  EXPECT_EQ(fill->cursor, request.cursor);
  const auto filled = service->complete(*fill, never);
  EXPECT_EQ(filled.insert_text, "");
  EXPECT_TRUE(filled.stats.value("contextOnly", false)) << filled.stats.dump();
  EXPECT_FALSE(filled.stats.contains("prefillBound")) << filled.stats.dump();
  const int whole = filled.stats["promptTokens"].get<int>();
  EXPECT_GT(whole, first.stats["promptTokens"].get<int>() + 100) << filled.stats.dump();
  EXPECT_EQ(filled.stats["prefilledTokens"].get<int>() + filled.stats["matchedTokens"].get<int>(),
            whole);
  EXPECT_FALSE(service->follow_up(*fill, filled));

  const auto next = service->complete(hurried(text + "y"), never);
  const auto& s = stats_of(next);
  EXPECT_FALSE(s.contains("prefillBound")) << s.dump();
  EXPECT_GE(s["promptTokens"].get<int>(), whole) << s.dump();
  EXPECT_GE(s["matchedTokens"].get<int>(), whole - 8) << s.dump();
  EXPECT_FALSE(service->follow_up(hurried(text + "y"), next));

  // Without the prefix cache there is nothing to keep the context in.
  EngineOptions uncached{.model = kModel, .threads = 1, .no_prefix_cache = true};
  auto plain = make_completion_service(uncached);
  const auto cut = plain->complete(request, never);
  ASSERT_TRUE(cut.stats.contains("prefillBound"));
  EXPECT_FALSE(plain->follow_up(request, cut));
}

// The context stage decides first: where nothing should be completed, no model time is spent,
// unless the user asked explicitly.
TEST(CompletionService, NoCompletionInTheMiddleOfAWord) {
  auto service = make_completion_service(EngineOptions{.model = kModel, .threads = 1});
  lsp::CompletionRequest r = request_at_end("total = compute(values)\n");
  r.language_id = "python";
  r.cursor = r.text.find("pute");
  lsp::CancelToken never;
  auto result = service->complete(r, never);
  EXPECT_TRUE(result.insert_text.empty());
  EXPECT_EQ(stats_of(result)["decision"], "none") << stats_of(result).dump();
  EXPECT_EQ(stats_of(result)["language"], "python");
  EXPECT_EQ(stats_of(result)["promptTokens"], 0);
  r.trigger = lsp::TriggerKind::Invoked;
  result = service->complete(r, never);
  EXPECT_EQ(stats_of(result)["decision"], "single-line") << stats_of(result).dump();
  EXPECT_GT(stats_of(result)["promptTokens"].get<int>(), 0);
}

// A model of a repository-level family (the Qwen2.5-Coder vocabulary) gets the definitions of
// names used near the cursor from the other open documents, and they stay in the cached head
// of the prompt while the user types.
TEST(CompletionService, OtherDocumentsDefinitionsReachTheCachedHeadOfThePrompt) {
  const auto path = std::filesystem::temp_directory_path() / "ghostline-repo-context-test.gguf";
  engine::write_random_model(path, {.n_embd = 64,
                                    .n_layer = 1,
                                    .n_head = 2,
                                    .n_head_kv = 1,
                                    .n_ff = 128,
                                    .n_ctx = 4096,
                                    .type = engine::GgmlType::Q8_0,
                                    .vocab_from = "../shared/data/tokenizer/qwen2.5-coder.gguf"});
  auto service =
      make_completion_service(EngineOptions{.model = path.string(), .threads = 1, .kv_mib = 16});
  const std::string util =
      "def load_config(path):\n    with open(path) as f:\n        return parse(f.read())\n";
  std::string main =
      "from util import load_config\n\ndef main():\n    cfg = load_config('a.toml')\n";
  for (int i = 0; i < 20; ++i) main += "    step_" + std::to_string(i) + "(cfg)\n";
  main += "    ";
  // The documents as a session's store tells the daemon's syntax state of them.
  SyntaxState syntax(/*cross_file=*/true);
  syntax.opened("s\nutil", lsp::TextDocument("file:///p/util.py", "python", 1, util));
  syntax.opened("s\nmain", lsp::TextDocument("file:///p/main.py", "python", 1, main));
  lsp::CancelToken never;
  auto ask = [&](const std::string& text, int64_t version) {
    lsp::CompletionRequest r = request_at_end(text);
    r.uri = "file:///p/main.py";
    r.language_id = "python";
    r.version = version;
    r.max_tokens = 4;
    r.document_key = "s\nmain";
    r.context = syntax.context_for(r);
    return service->complete(r, never);
  };
  auto first = ask(main, 1);
  EXPECT_EQ(stats_of(first)["otherFiles"], 1) << stats_of(first).dump();
  EXPECT_GT(stats_of(first)["otherFilesTokens"].get<int>(), 10);
  const lsp::DocumentEdit typed{.uri = "file:///p/main.py",
                                .version = 2,
                                .begin = main.size(),
                                .end = main.size(),
                                .new_text = "r"};
  syntax.edited("s\nmain", lsp::TextDocument("file:///p/main.py", "python", 2, main + "r"),
                std::span(&typed, 1));
  auto second = ask(main + "r", 2);
  const auto& s2 = stats_of(second);
  EXPECT_EQ(s2["otherFiles"], 1);
  EXPECT_GE(s2["matchedTokens"].get<int>(), s2["promptTokens"].get<int>() - 24) << s2.dump();
  syntax.closed("s\nutil");
  syntax.closed("s\nmain");
  service->document_closed("s\nutil");
  service->document_closed("s\nmain");
  std::filesystem::remove(path);
}

TEST(CompletionService, MissingDefaultModelIsNotReady) {
  setenv("GHOSTLINE_MODEL_DIR", "/nonexistent-ghostline-models", 1);
  auto service = make_completion_service(EngineOptions{});
  unsetenv("GHOSTLINE_MODEL_DIR");
  EXPECT_FALSE(service->ready());
  EXPECT_NE(service->describe().find("no model"), std::string::npos);
  EXPECT_THROW(make_completion_service(EngineOptions{.model = "/nonexistent.gguf"}),
               std::runtime_error);
}

}  // namespace
}  // namespace ghostline::daemon
