#include "daemon/cli/engine_flags.h"

#include "daemon/cli/backend_choice.h"
#include "daemon/cli/model_names.h"
#include "daemon/pipeline/completion_service.h"

namespace ghostline::daemon {

void add_engine_options(ArgParser& p, EngineOptions& o) {
  // A pulled model's name stands for its file in the model folder (ghostline pull NAME).
  p.option(
      "-m,--model", "FILE|NAME",
      "GGUF model to complete with: a file, or a model fetched by `ghostline pull NAME` "
      "(default: " +
          default_model_path() + ")",
      [&o](std::string_view arg) {
        o.model = resolve_model_argument(arg);
        return true;
      },
      "");
  p.option("-t,--threads", "N", "compute threads (0: all cores)", &o.threads);
  p.option("--kv-mib", "MIB", "memory for the KV cache (at least 1)", &o.kv_mib);
  p.flag("--no-prefix-cache", "compute every prompt from scratch (to measure what the cache saves)",
         &o.no_prefix_cache);
  p.option(
      "--draft", "FILE|NAME",
      "draft model for speculative decoding, a file or a pulled name (same vocabulary as the "
      "model; n-gram drafts are always used)",
      [&o](std::string_view arg) {
        o.draft = resolve_model_argument(arg);
        return true;
      },
      "");
  p.option(
      "--speculation", "MODE",
      "auto (n-gram lookup, plus the draft model when given), ngram, draft, or off (to measure "
      "what "
      "speculation saves)",
      [&o](std::string_view word) {
        auto mode = parse_speculation_mode(word);
        if (mode) o.speculation = *mode;
        return mode.has_value();
      },
      speculation_mode_name(o.speculation));
  add_backend_option(p, o.backend, /*with_remote=*/true);
  add_remote_options(p, o.remote);
}

void add_remote_options(ArgParser& p, remote::RemoteOptions& o) {
  p.option("--url", "URL",
           "--backend remote: the server, http(s)://HOST[:PORT][/PATH] (OpenAI-compatible: vLLM, "
           "SGLang, TGI, "
           "llama.cpp's server)",
           &o.url);
  p.option("--api-key-env", "VAR",
           "--backend remote: send the API key held in this environment variable", &o.api_key_env);
  p.option("--remote-model", "NAME",
           "--backend remote: the model name the server serves (OpenAI `model`)", &o.model);
  p.option(
      "--remote-api", "API",
      "--backend remote: openai (/v1/completions with the FIM prompt as text) or infill "
      "(llama.cpp's /infill)",
      [&o](std::string_view word) {
        auto api = remote::parse_remote_api(word);
        if (api) o.api = *api;
        return api.has_value();
      },
      remote::remote_api_name(o.api));
  p.option("--remote-ca-file", "FILE",
           "--backend remote: CA certificates (PEM) to trust for https besides the system's",
           &o.ca_file);
  p.option("--remote-timeout-ms", "MS",
           "--backend remote: the longest wait for the server within a request",
           &o.read_timeout_ms);
}

}  // namespace ghostline::daemon
