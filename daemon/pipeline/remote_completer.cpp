#include "daemon/pipeline/remote_completer.h"

#include <cstdlib>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "base/clock.h"
#include "daemon/pipeline/syntax_context.h"
#include "daemon/remote/sse_parser.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "syntax/post_process.h"

namespace ghostline::daemon {

namespace {

remote::HttpClientOptions http_options(const remote::RemoteOptions& o) {
  remote::HttpClientOptions h;
  h.connect_timeout = std::chrono::milliseconds(o.connect_timeout_ms);
  h.read_timeout = std::chrono::milliseconds(o.read_timeout_ms);
  h.retries = o.retries;
  h.retry_backoff = std::chrono::milliseconds(o.retry_backoff_ms);
  h.pool_size = o.pool_size;
  h.ca_file = o.ca_file;
  return h;
}

remote::Url server_url(const remote::RemoteOptions& o) {
  if (o.url.empty())
    throw std::invalid_argument("--backend remote needs the server's address: --url URL");
  return remote::Url::parse(o.url);
}

// The file name part of a document URI, for the server's file separators.
std::string file_name(std::string_view uri) {
  const size_t slash = uri.rfind('/');
  return std::string(slash == std::string_view::npos ? uri : uri.substr(slash + 1));
}

}  // namespace

RemoteGenerate::RemoteGenerate(const EngineOptions& options, const std::string& tokenizer_path)
    : options_(options),
      http_(std::make_unique<remote::HttpClient>(server_url(options.remote),
                                                 http_options(options.remote))) {
  const auto& o = options.remote;
  if (!o.api_key_env.empty()) {
    const char* key = std::getenv(o.api_key_env.c_str());
    if (!key || !*key)
      throw std::invalid_argument("--api-key-env " + o.api_key_env +
                                  ": that environment variable is not set");
    authorization_ = std::string("Bearer ") + key;
  }
  const auto file = engine::GgufFile::open(tokenizer_path);
  tokenizer_ = engine::Tokenizer::from_gguf(*file);
  const engine::FimTemplate fim = engine::fim_template(*tokenizer_, *file);
  if (o.api == remote::RemoteApi::Infill && fim.mode == FimMode::PrefixOnly)
    throw std::invalid_argument(
        "--remote-api infill needs a vocabulary with fill-in-the-middle tokens; " + tokenizer_path +
        " has none");
  prompts_ = std::make_unique<PromptAssembler>(*tokenizer_, fim);
}

RemoteGenerate::~RemoteGenerate() = default;

bool RemoteGenerate::sees_suffix() const { return prompts_->mode() != FimMode::PrefixOnly; }

std::string RemoteGenerate::describe() const {
  return "remote " + http_->url().origin() + http_->url().base_path + " (" +
         remote::remote_api_name(options_.remote.api) + ", " +
         engine::fim_mode_name(prompts_->mode()) + " prompts)";
}

// The model the server was asked for, else the server: what the acceptance counts are kept by.
std::string RemoteGenerate::model_name() const {
  if (!options_.remote.model.empty()) return options_.remote.model;
  return "remote " + http_->url().origin();
}

RemoteCompleter::RemoteCompleter(const EngineOptions& options, const std::string& tokenizer_path,
                                 std::unique_ptr<Generate> local)
    : options_(options),
      server_(options, tokenizer_path),
      local_(std::move(local)),
      breaker_(options.remote.breaker_failures,
               std::chrono::milliseconds(options.remote.breaker_cool_down_ms)) {
  const auto& o = options.remote;
  const auto& url = server_.http().url();
  counters_ = {{"backend", "remote"},
               {"server", url.origin() + url.base_path},
               {"api", remote::remote_api_name(o.api)},
               {"requests", 0},
               {"completed", 0},
               {"failures", 0},
               {"cancelledStreams", 0},
               {"streamsClosedByStopRules", 0},
               {"events", 0},
               {"answeredLocally", 0},
               {"answeredEmpty", 0},
               {"breaker", "closed"},
               {"breakerOpened", 0},
               {"lastError", ""}};
  spdlog::info("remote backend: {} ({} API, {} prompts from {}){}",
               counters_["server"].get<std::string>(), remote::remote_api_name(o.api),
               engine::fim_mode_name(server_.fim_mode()), tokenizer_path,
               local_ ? ", local fallback " + local_->describe() : std::string());
}

RemoteCompleter::~RemoteCompleter() = default;

std::string RemoteCompleter::describe() const {
  std::string d = server_.describe();
  if (local_) d += ", fallback " + local_->describe();
  return d;
}

std::string RemoteCompleter::model_name() const { return server_.model_name(); }

std::string RemoteCompleter::counters_json() const {
  std::lock_guard lock(counters_mutex_);
  return counters_.dump();
}

lsp::CompletionResult RemoteCompleter::complete(const lsp::CompletionRequest& request,
                                                const lsp::CancelToken& cancel) {
  {
    std::lock_guard lock(counters_mutex_);
    counters_["requests"] = counters_["requests"].get<uint64_t>() + 1;
  }
  if (!breaker_.allow(Clock::now()))
    return answer_without_server(request, cancel, "the circuit breaker is open");
  PipelineRequest q(request, options_.deadline_ms, options_.max_tokens);
  q.stats.backend = CompletionStats::Backend::Remote;
  try {
    lsp::CompletionResult result = run_pipeline(server_, q, cancel, nullptr);
    // A cursor where nothing is to be completed never reaches the server: the counters and the
    // circuit breaker hear only of requests that did (a half-open breaker waits for a real trial).
    if (q.stats.remote) {
      count_stream(q.stats);
      note_success();
    }
    return result;
  } catch (const remote::HttpError& e) {
    return after_failure(request, cancel, e.what());
  } catch (const nlohmann::json::exception& e) {  // an event whose fields have unexpected types
    return after_failure(request, cancel,
                         std::string("the server sent an unexpected event: ") + e.what());
  }
}

void RemoteCompleter::count_stream(const CompletionStats& stats) {
  std::lock_guard lock(counters_mutex_);
  counters_["events"] = counters_["events"].get<uint64_t>() + stats.remote->events;
  if (stats.remote->cancelled)
    counters_["cancelledStreams"] = counters_["cancelledStreams"].get<uint64_t>() + 1;
  else
    counters_["completed"] = counters_["completed"].get<uint64_t>() + 1;
  if (stats.stop == engine::StopReason::Callback)
    counters_["streamsClosedByStopRules"] =
        counters_["streamsClosedByStopRules"].get<uint64_t>() + 1;
}

lsp::CompletionResult RemoteCompleter::after_failure(const lsp::CompletionRequest& request,
                                                     const lsp::CancelToken& cancel,
                                                     const std::string& why) {
  note_failure(why);
  if (cancel.cancelled()) return {};
  return answer_without_server(request, cancel, why);
}

void RemoteGenerate::prompt(PipelineRequest& q) {
  const auto [other_files, repo] = SyntaxState::prompt_context(q.request);
  q.prompt = prompts_->build(q.request.text, q.request.cursor, PromptLimits{}, other_files, repo);
}

Generated RemoteGenerate::generate(PipelineRequest& q, syntax::StopRules& rules,
                                   const lsp::CancelToken& cancel, const AnswerEarlyText&) {
  const std::string body = request_body(q);
  server_stop_reason_.clear();
  remote::HttpClient::Headers headers;
  if (!authorization_.empty()) headers.emplace_back("Authorization", authorization_);

  // Events arrive as the server generates; the stop rules see each piece as it comes, and the
  // stream is closed as soon as they (or the deadline, counted from the first byte: the network
  // and the server's queue are not ours to budget) say so. The server stops by itself at one
  // of the template's stop tokens.
  Generated generated;
  generated.through_rules = true;  // text from JSON strings: well-formed as it comes
  generated.stop = engine::StopReason::StopToken;
  CompletionStats::RemoteStream stream{.api = remote::remote_api_name(options_.remote.api)};
  std::optional<Clock::time_point> first_byte;
  remote::SseParser sse([&](const remote::SseEvent& event) {
    const auto text = event_text(event.data);
    if (!text) return true;  // [DONE] or the last event: the response ends by itself
    if (text->empty()) return true;
    ++stream.text_events;
    generated.text += *text;
    if (rules.append(*text)) {
      generated.stop = engine::StopReason::Callback;
      return false;
    }
    if (ms_since(*first_byte) > q.deadline_ms) {
      generated.stop = engine::StopReason::Deadline;
      return false;
    }
    return true;
  });
  const auto path =
      options_.remote.api == remote::RemoteApi::Infill ? "/infill" : "/v1/completions";
  const remote::StreamResult r = http_->post_stream(
      path, body, headers,
      [&](std::string_view piece) {
        if (!first_byte) first_byte = Clock::now();
        return sse.feed(piece);
      },
      cancel.flag());
  sse.finish();
  if (r.end == remote::StreamEnd::Cancelled)
    generated.stop = engine::StopReason::Cancelled;
  else if (generated.stop == engine::StopReason::StopToken && server_stop_reason_ == "length")
    generated.stop = engine::StopReason::MaxTokens;
  stream.events = sse.events();
  stream.first_byte_ms = r.first_byte_ms;
  stream.reused_connection = r.reused_connection;
  stream.connect_retries = r.retries;
  stream.closed_early = r.end != remote::StreamEnd::Complete;
  stream.cancelled = r.end == remote::StreamEnd::Cancelled;
  q.stats.remote = stream;
  return generated;
}

lsp::CompletionResult RemoteCompleter::answer_without_server(const lsp::CompletionRequest& request,
                                                             const lsp::CancelToken& cancel,
                                                             const std::string& why) {
  PipelineRequest q(request, options_.deadline_ms, options_.max_tokens);
  q.stats.remote_skipped = why;
  if (local_) {
    lsp::CompletionResult r = run_pipeline(*local_, q, cancel, nullptr);
    std::lock_guard lock(counters_mutex_);
    counters_["answeredLocally"] = counters_["answeredLocally"].get<uint64_t>() + 1;
    return r;
  }
  lsp::CompletionResult r;
  r.replace_begin = r.replace_end = request.cursor;
  q.stats.backend = CompletionStats::Backend::Remote;
  q.stats.answered_empty = true;
  q.stats.total_ms = ms_since(q.start);
  r.stats = q.stats.to_json();
  std::lock_guard lock(counters_mutex_);
  counters_["answeredEmpty"] = counters_["answeredEmpty"].get<uint64_t>() + 1;
  return r;
}

std::string RemoteGenerate::request_body(const PipelineRequest& q) const {
  const FimTokens& fim = prompts_->fim();
  std::vector<std::string> stop;
  for (int32_t t : fim.stop) stop.emplace_back(tokenizer_->token_text(t));
  std::span<const int32_t> tokens = q.prompt.tokens;
  // The server adds BOS itself when its model wants one.
  if (fim.add_bos && !tokens.empty() && tokens.front() == fim.bos) tokens = tokens.subspan(1);

  nlohmann::json body;
  if (options_.remote.api == remote::RemoteApi::OpenAi) {
    body = {{"prompt", tokenizer_->decode(tokens)},
            {"max_tokens", q.max_tokens},
            {"temperature", 0},
            {"stream", true},
            {"stop", stop}};
    if (!options_.remote.model.empty()) body["model"] = options_.remote.model;
    return body.dump();
  }
  // llama.cpp's /infill takes the parts and applies the model's template itself: cut the
  // prompt at its FIM tokens (the same text as the OpenAI prompt, in its own fields).
  std::vector<int32_t> far, prefix, suffix;
  std::vector<int32_t>* part = nullptr;
  for (int32_t t : tokens) {
    if (t == fim.file_sep)
      part = &far;
    else if (t == fim.pre)
      part = &prefix;
    else if (t == fim.suf)
      part = &suffix;
    else if (t == fim.mid)
      part = nullptr;
    else if (part)
      part->push_back(t);
  }
  nlohmann::json extra = nlohmann::json::array();
  if (!far.empty())
    extra.push_back(
        {{"filename", file_name(q.request.uri)}, {"text", tokenizer_->decode_continuation(far)}});
  body = {{"input_prefix", tokenizer_->decode(prefix)},
          {"input_suffix", tokenizer_->decode_continuation(suffix)},
          {"input_extra", extra},
          {"n_predict", q.max_tokens},
          {"temperature", 0},
          {"cache_prompt", true},
          {"stream", true},
          {"stop", stop}};
  return body.dump();
}

std::optional<std::string> RemoteGenerate::event_text(std::string_view data) {
  if (data == "[DONE]") return std::nullopt;
  const auto event = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (event.is_discarded() || !event.is_object())
    throw remote::HttpError(
        "the server sent an event that is not JSON: " + std::string(data.substr(0, 200)), false);
  if (event.contains("error"))
    throw remote::HttpError("the server reported: " + event["error"].dump(), false);
  std::string text;
  if (const auto choices = event.find("choices");
      choices != event.end() && choices->is_array() && !choices->empty()) {
    const auto& choice = choices->front();
    if (auto t = choice.find("text"); t != choice.end() && t->is_string())
      text = t->get<std::string>();
    if (auto f = choice.find("finish_reason"); f != choice.end() && f->is_string())
      server_stop_reason_ = f->get<std::string>();
  } else if (auto content = event.find("content"); content != event.end() && content->is_string()) {
    text = content->get<std::string>();  // llama.cpp's native format (/infill, /completion)
    if (event.value("stop", false) && event.value("stopped_limit", false))
      server_stop_reason_ = "length";
  }
  return text;
}

void RemoteCompleter::note_failure(const std::string& why) {
  const bool opened = breaker_.record_failure(Clock::now());
  std::lock_guard lock(counters_mutex_);
  copy_http_counters();
  counters_["failures"] = counters_["failures"].get<uint64_t>() + 1;
  counters_["lastError"] = why;
  counters_["breaker"] = remote::breaker_state_name(breaker_.state());
  if (!opened) {
    spdlog::warn("remote: {}", why);
    return;
  }
  counters_["breakerOpened"] = counters_["breakerOpened"].get<uint64_t>() + 1;
  // Said once per outage: a half-open trial that fails again stays quiet.
  if (outage_announced_) return;
  outage_announced_ = true;
  spdlog::warn(
      "remote: {} failed {} times in a row (last: {}); answering {} and trying the server again "
      "every {} ms",
      counters_["server"].get<std::string>(), breaker_.consecutive_failures(), why,
      local_ ? "from the local model" : "with no completions",
      options_.remote.breaker_cool_down_ms);
}

void RemoteCompleter::note_success() {
  breaker_.record_success();
  std::lock_guard lock(counters_mutex_);
  copy_http_counters();
  counters_["breaker"] = remote::breaker_state_name(breaker_.state());
  if (outage_announced_) {
    outage_announced_ = false;
    spdlog::info("remote: {} answers again", counters_["server"].get<std::string>());
  }
}

void RemoteCompleter::copy_http_counters() {
  const auto c = server_.http().counters();
  counters_["connectionsOpened"] = c.connections_opened;
  counters_["connectionsReused"] = c.connections_reused;
  counters_["connectRetries"] = c.connect_retries;
  counters_["httpRequests"] = c.requests;
  counters_["streamsClosedEarly"] = c.streams_closed_early;
}

}  // namespace ghostline::daemon
