// The remote backend against a real server process: llama.cpp (node-llama-cpp's prebuilt
// libraries) serving the shared small model, started by each test (tests/remote/test_server.h).
#include "daemon/pipeline/remote_completer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "daemon/pipeline/completion_service.h"
#include "syntax/post_process.h"
#include "test_server.h"

namespace ghostline::daemon {
namespace {

using ghostline::test::TestServer;
using nlohmann::json;

// The daemon builds prompts with the model's vocabulary alone: no weights needed.
using test::kFimModel;
using test::kFimVocabulary;
constexpr const char* kVocabulary = test::kPrefixVocabulary;

EngineOptions remote_options(const std::string& url) {
  EngineOptions o;
  o.backend = BackendChoice::Remote;
  o.model = kVocabulary;
  o.max_tokens = 6;
  o.deadline_ms = 60000;  // counted from the first byte; these tests stop on tokens, not time
  o.remote.url = url;
  o.remote.read_timeout_ms = 60000;
  o.remote.retry_backoff_ms = 10;
  return o;
}

lsp::CompletionRequest request_at_end(std::string text) {
  lsp::CompletionRequest r;
  r.uri = "file:///src/main.c";
  r.language_id = "c";
  r.text = std::move(text);
  r.cursor = r.text.size();
  return r;
}

json counters(const lsp::Completer& c) {
  return json::parse(c.counters_json());
}

// Captures the log, to check what it says (and what it never says).
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return out_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1))
    ++n;
  return n;
}

// The completion is what the server streamed, cut by the daemon's own post-processing.
void expect_post_processed_server_text(const lsp::CompletionRequest& request,
                                       const lsp::CompletionResult& r, const json& served) {
  const std::string generated = r.stats.at("generatedText");
  const std::string streamed = served.at("text");
  EXPECT_EQ(streamed.substr(0, generated.size()), generated)
      << "the daemon saw what the server sent";
  const std::string stop = r.stats.at("stop");
  const bool cut_short = stop == "max_tokens" || stop == "deadline";
  EXPECT_EQ(r.insert_text, syntax::finish_completion(syntax::shape_at(request.text, request.cursor),
                                                     generated, cut_short));
}

TEST(RemoteCompleter, SendsTheFimPromptAsTextToAnOpenAiCompatibleServer) {
  TestServer server(kFimModel);
  RemoteCompleter completer(remote_options(server.url()), kFimVocabulary, nullptr);
  const auto request = request_at_end(
      "#include <stdio.h>\n\nint main(void) {\n  int total = 0;\n  for (int i = 0; i < 10; ++i) {");
  const auto r = completer.complete(request, lsp::CancelToken());

  const json s = server.stats();
  const json& served = s.at("last");
  EXPECT_EQ(served.at("api"), "completions");
  // The server received the daemon's FIM prompt as text and tokenized it to the same tokens.
  EXPECT_EQ(served.at("promptTokens"), r.stats.at("promptTokens"));
  const std::string prompt = served.at("prompt");
  EXPECT_NE(prompt.find("<｜fim▁begin｜>#include <stdio.h>"), std::string::npos) << prompt;
  EXPECT_TRUE(prompt.ends_with("<｜fim▁end｜>")) << prompt;
  EXPECT_EQ(served.at("body").at("max_tokens"), 6);
  EXPECT_EQ(served.at("body").at("stream"), true);
  EXPECT_EQ(served.at("body").at("temperature"), 0);

  EXPECT_EQ(r.stats.at("backend"), "remote");
  EXPECT_EQ(r.stats.at("fim"), "psm");
  expect_post_processed_server_text(request, r, served);
  EXPECT_EQ(counters(completer).at("completed"), 1);
}

TEST(RemoteCompleter, StreamsACompletionThroughTheServer) {
  TestServer server;
  RemoteCompleter completer(remote_options(server.url()), kVocabulary, nullptr);
  const auto request = request_at_end("int main() {");
  const auto r = completer.complete(request, lsp::CancelToken());

  const json served = server.stats().at("last");
  EXPECT_EQ(served.at("prompt"), request.text)
      << "no FIM tokens: the prompt is the text before the cursor";
  EXPECT_EQ(served.at("promptTokens"), r.stats.at("promptTokens"));
  const std::string streamed = served.at("text");
  ASSERT_FALSE(streamed.empty());
  // One event per token, then the finish event and [DONE].
  EXPECT_EQ(r.stats.at("textEvents"), 6);
  EXPECT_EQ(r.stats.at("events"), 8);
  EXPECT_EQ(r.stats.at("stop"), "max_tokens");
  EXPECT_GE(r.stats.at("firstByteMs").get<double>(), 0);
  EXPECT_FALSE(r.insert_text.empty());
  expect_post_processed_server_text(request, r, served);
}

TEST(RemoteCompleter, CompletesThroughLlamaCppInfill) {
  TestServer server(kFimModel);
  auto options = remote_options(server.url());
  options.remote.api = remote::RemoteApi::Infill;
  RemoteCompleter completer(options, kFimVocabulary, nullptr);
  auto request = request_at_end("def area(w, h):\n    return w * h\n\nprint(area(2, 3))\n");
  request.uri = "file:///src/geometry.py";
  request.cursor = request.text.find(" * h");
  const auto r = completer.complete(request, lsp::CancelToken());

  const json served = server.stats().at("last");
  EXPECT_EQ(served.at("api"), "infill");
  EXPECT_EQ(served.at("body").at("input_prefix"), request.text.substr(0, request.cursor));
  const std::string suffix = served.at("body").at("input_suffix");
  EXPECT_TRUE(request.text.substr(request.cursor).starts_with(suffix)) << suffix;
  EXPECT_FALSE(suffix.empty());
  EXPECT_EQ(served.at("body").at("cache_prompt"), true);
  EXPECT_EQ(served.at("body").at("n_predict"), 6);
  EXPECT_EQ(r.stats.at("api"), "infill");
  expect_post_processed_server_text(request, r, served);
}

TEST(RemoteCompleter, ReusesOneKeptAliveConnection) {
  TestServer server;
  const int before = server.stats().at("connections");  // the stats reader's own connection
  RemoteCompleter completer(remote_options(server.url()), kVocabulary, nullptr);
  auto request = request_at_end("int square(int x) {\n  return x");
  for (int i = 0; i < 3; ++i) {
    request.text += " ";
    request.cursor = request.text.size();
    const auto r = completer.complete(request, lsp::CancelToken());
    EXPECT_EQ(r.stats.at("reusedConnection"), i > 0);
    EXPECT_EQ(r.stats.at("streamClosedEarly"), false);
  }
  const json s = server.stats();
  EXPECT_EQ(s.at("requests"), 3);
  EXPECT_EQ(s.at("connections").get<int>() - before, 1);
  EXPECT_EQ(counters(completer).at("connectionsOpened"), 1);
  EXPECT_EQ(counters(completer).at("connectionsReused"), 2);
}

TEST(RemoteCompleter, ACancelClosesTheStreamAndTheServerStops) {
  TestServer server;
  auto options = remote_options(server.url("slow"));
  options.max_tokens = 200;  // 200 tokens at 100 ms each: the cancel comes long before the end
  RemoteCompleter completer(options, kVocabulary, nullptr);
  lsp::CancelToken cancel;
  std::thread canceller([&] {
    // Cancel once the server is streaming this request.
    server.wait_for([](const json& s) {
      return !s.at("last").is_null() && !s.at("last").at("text").get<std::string>().empty();
    });
    cancel.cancel();
  });
  const auto r = completer.complete(request_at_end("int main() {"), cancel);
  canceller.join();
  EXPECT_EQ(r.stats.at("cancelled"), true);
  EXPECT_EQ(counters(completer).at("cancelledStreams"), 1);
  EXPECT_EQ(counters(completer).at("failures"), 0);

  const json s = server.wait_for([](const json& s) {
    return s.at("closedEarly") == 1 && !s.at("last").at("reason").is_null();
  });
  EXPECT_EQ(s.at("closedEarly"), 1) << "the server saw the stream close";
  EXPECT_EQ(s.at("last").at("reason"), "closed") << "and stopped generating";
  EXPECT_EQ(s.at("completed"), 0);
}

TEST(RemoteCompleter, StopRulesCloseTheStream) {
  // This model continues "def fib(n):\n" with blank lines, which end the block being written.
  // The prompt goes as plain text (a vocabulary without FIM tokens), so the model sees just it.
  // Paced at 100 ms a token, so that the server is still generating when the stream closes.
  TestServer server(kFimModel);
  auto options = remote_options(server.url("slow"));
  options.max_tokens = 64;
  RemoteCompleter completer(options, kVocabulary, nullptr);
  auto request = request_at_end("def fib(n):\n");
  request.language_id = "python";
  const auto r = completer.complete(request, lsp::CancelToken());
  EXPECT_EQ(r.stats.at("stop"), "stop_rule") << r.stats.dump();
  EXPECT_EQ(r.stats.at("streamClosedEarly"), true);
  EXPECT_LT(r.stats.at("textEvents").get<int>(), 64);
  EXPECT_EQ(counters(completer).at("streamsClosedByStopRules"), 1);
  const json s =
      server.wait_for([](const json& s) { return !s.at("last").at("reason").is_null(); });
  EXPECT_EQ(s.at("last").at("reason"), "closed") << "the server stopped before its 64 tokens";
  EXPECT_EQ(s.at("closedEarly"), 1);
  expect_post_processed_server_text(request, r, s.at("last"));
}

TEST(RemoteCompleter, AServerThatSendsNothingTimesOut) {
  TestServer server;
  auto options = remote_options(server.url("stall"));
  options.remote.read_timeout_ms = 300;
  RemoteCompleter completer(options, kVocabulary, nullptr);
  const auto r = completer.complete(request_at_end("int main() {"), lsp::CancelToken());
  EXPECT_EQ(r.insert_text, "");
  EXPECT_EQ(r.stats.at("answeredEmpty"), true);
  EXPECT_NE(r.stats.at("remoteSkipped").get<std::string>().find("sent nothing for 300 ms"),
            std::string::npos)
      << r.stats.dump();
  EXPECT_EQ(counters(completer).at("failures"), 1);
  EXPECT_EQ(counters(completer).at("connectRetries"), 0)
      << "a request the server received is not sent again";
}

TEST(RemoteCompleter, SurvivesAServerThatDiesMidStreamAndOpensTheBreaker) {
  TestServer server;
  auto options = remote_options(server.url("die"));
  options.remote.breaker_failures = 2;
  options.remote.breaker_cool_down_ms = 600000;
  RemoteCompleter completer(options, kVocabulary, nullptr);
  LogCapture log;
  const auto request = request_at_end("int main() {");

  auto r = completer.complete(request, lsp::CancelToken());  // the server exits after two tokens
  EXPECT_EQ(r.stats.at("answeredEmpty"), true);
  EXPECT_NE(r.stats.at("remoteSkipped").get<std::string>().find("lost"), std::string::npos)
      << r.stats.dump();
  for (int i = 0; i < 100 && !server.exited(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(server.exited());

  r = completer.complete(request, lsp::CancelToken());  // nothing listens now: connect fails
  EXPECT_NE(r.stats.at("remoteSkipped").get<std::string>().find("cannot connect"),
            std::string::npos);
  json c = counters(completer);
  EXPECT_EQ(c.at("failures"), 2);
  EXPECT_EQ(c.at("connectRetries"), options.remote.retries);
  EXPECT_EQ(c.at("breaker"), "open");
  EXPECT_EQ(c.at("breakerOpened"), 1);

  const auto http_requests = c.at("httpRequests");
  for (int i = 0; i < 3; ++i) {
    r = completer.complete(request, lsp::CancelToken());
    EXPECT_EQ(r.stats.at("remoteSkipped"), "the circuit breaker is open");
  }
  c = counters(completer);
  EXPECT_EQ(c.at("httpRequests"), http_requests) << "an open breaker sends nothing";
  EXPECT_EQ(c.at("answeredEmpty"), 5);
  EXPECT_EQ(count(log.text(), "failed 2 times in a row"), 1u) << log.text();
  EXPECT_NE(log.text().find("with no completions"), std::string::npos);
}

TEST(RemoteCompleter, FallsBackToTheLocalModelAndReturnsToTheServer) {
  const int port = test::free_port();
  auto options = remote_options("http://127.0.0.1:" + std::to_string(port));
  options.model = test::kPrefixModel;  // with weights: the daemon can complete locally too
  options.remote.breaker_failures = 1;
  options.remote.breaker_cool_down_ms = 300;
  options.remote.retries = 1;
  LogCapture log;
  auto completer = make_completion_service(options);  // the daemon's own choice of completers
  EXPECT_NE(completer->describe().find("fallback"), std::string::npos) << completer->describe();
  const auto request = request_at_end("int main() {");

  // No server yet: the first request fails and opens the breaker; it and the next are answered
  // by the local model.
  for (int i = 0; i < 2; ++i) {
    const auto r = completer->complete(request, lsp::CancelToken());
    EXPECT_EQ(r.stats.at("backend"), "local") << r.stats.dump();
    EXPECT_TRUE(r.stats.contains("generatedTokens"));
  }
  EXPECT_EQ(counters(*completer).at("answeredLocally"), 2);
  EXPECT_EQ(counters(*completer).at("breaker"), "open");
  EXPECT_EQ(count(log.text(), "answering from the local model"), 1u) << log.text();

  // The server comes up; after the cool-down the next request tries it and it answers.
  TestServer server(test::kPrefixModel, port);
  std::this_thread::sleep_for(std::chrono::milliseconds(options.remote.breaker_cool_down_ms + 50));
  const auto r = completer->complete(request, lsp::CancelToken());
  EXPECT_EQ(r.stats.at("backend"), "remote") << r.stats.dump();
  EXPECT_EQ(counters(*completer).at("breaker"), "closed");
  EXPECT_EQ(server.stats().at("requests"), 1);
  EXPECT_NE(log.text().find("answers again"), std::string::npos);
}

TEST(RemoteCompleter, SendsTheApiKeyFromTheEnvironmentAndNeverLogsIt) {
  TestServer server;
  constexpr const char* kKey = "sk-ghostline-test-4b1d";
  setenv("GHOSTLINE_TEST_API_KEY", kKey, 1);
  auto options = remote_options(server.url());
  options.remote.api_key_env = "GHOSTLINE_TEST_API_KEY";
  options.remote.model = "deepseek-coder-test";
  LogCapture log;
  {
    RemoteCompleter completer(options, kVocabulary, nullptr);
    const auto r = completer.complete(request_at_end("int main() {"), lsp::CancelToken());
    spdlog::info("{} {}", completer.describe(), completer.counters_json());
    EXPECT_EQ(completer.counters_json().find(kKey), std::string::npos);
    EXPECT_EQ(r.stats.dump().find(kKey), std::string::npos);
  }
  const json served = server.stats().at("last");
  EXPECT_EQ(served.at("authorization"), std::string("Bearer ") + kKey);
  EXPECT_EQ(served.at("body").at("model"), "deepseek-coder-test");
  EXPECT_FALSE(log.text().empty());
  EXPECT_EQ(log.text().find(kKey), std::string::npos) << log.text();

  options.remote.api_key_env = "GHOSTLINE_TEST_UNSET_VARIABLE";
  unsetenv("GHOSTLINE_TEST_UNSET_VARIABLE");
  EXPECT_THROW(RemoteCompleter(options, kVocabulary, nullptr), std::invalid_argument);
}

TEST(RemoteCompleter, SpeaksHttpsAndVerifiesTheServerCertificate) {
  test::TestCertificate certificate("localhost");
  TestServer server(test::kPrefixModel, 0, certificate.cert, certificate.key);
  auto options = remote_options(server.url());
  options.remote.ca_file = certificate.cert;  // the self-signed certificate is its own CA
  {
    RemoteCompleter completer(options, kVocabulary, nullptr);
    const auto r = completer.complete(request_at_end("int main() {"), lsp::CancelToken());
    EXPECT_EQ(r.stats.at("backend"), "remote") << r.stats.dump();
    EXPECT_FALSE(r.insert_text.empty());
    EXPECT_EQ(server.stats().at("requests"), 1);
  }
  // Not trusted: the handshake fails and nothing is sent.
  options.remote.ca_file.clear();
  options.remote.retries = 0;
  RemoteCompleter untrusting(options, kVocabulary, nullptr);
  auto r = untrusting.complete(request_at_end("int main() {"), lsp::CancelToken());
  EXPECT_EQ(r.stats.at("answeredEmpty"), true);
  EXPECT_NE(r.stats.at("remoteSkipped").get<std::string>().find("TLS handshake"), std::string::npos)
      << r.stats.dump();
  // Trusted, but reached under a name the certificate does not carry (it names localhost only).
  options.remote.ca_file = certificate.cert;
  options.remote.url = "https://127.0.0.1:" + std::to_string(server.port());
  RemoteCompleter wrong_name(options, kVocabulary, nullptr);
  r = wrong_name.complete(request_at_end("int main() {"), lsp::CancelToken());
  EXPECT_EQ(r.stats.at("answeredEmpty"), true);
  EXPECT_NE(r.stats.at("remoteSkipped").get<std::string>().find("TLS handshake"), std::string::npos)
      << r.stats.dump();
  EXPECT_EQ(server.stats().at("requests"), 1);
}

TEST(RemoteCompleter, RefusesAMissingUrlOrTokenizer) {
  auto options = remote_options("");
  EXPECT_THROW(RemoteCompleter(options, kVocabulary, nullptr), std::invalid_argument);
  options.remote.url = "http://127.0.0.1:1";
  options.model = "no/such/vocabulary.gguf";
  EXPECT_THROW(make_completion_service(options), std::runtime_error);
}

}  // namespace
}  // namespace ghostline::daemon
