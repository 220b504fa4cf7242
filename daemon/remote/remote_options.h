// How the remote backend reaches its inference server: filled from the command line
// (engine_flags.cpp) into EngineOptions::remote.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ghostline::daemon::remote {

// The server's API: OpenAI's /v1/completions with the FIM prompt as text (vLLM, SGLang, TGI,
// llama.cpp's server), or llama.cpp's own /infill (prefix, suffix and other files separately;
// the server applies the model's FIM template).
enum class RemoteApi { OpenAi, Infill };

std::optional<RemoteApi> parse_remote_api(std::string_view word);
const char* remote_api_name(RemoteApi api);

struct RemoteOptions {
  std::string url;          // http(s)://host[:port][/base path]; the API paths go after it
  std::string api_key_env;  // environment variable holding the API key; empty: no key
  std::string model;        // the `model` field of OpenAI requests; empty: not sent
  std::string ca_file;      // https: CA certificates (PEM) trusted besides the system's
  RemoteApi api = RemoteApi::OpenAi;
  int connect_timeout_ms = 2000;
  int read_timeout_ms = 10000;       // the longest silence of the server within one request
  int retries = 2;                   // for connection failures only: nothing was sent yet
  int retry_backoff_ms = 50;         // doubles with each retry
  int pool_size = 4;                 // idle keep-alive connections kept
  int breaker_failures = 3;          // consecutive failed requests that open the circuit breaker
  int breaker_cool_down_ms = 10000;  // then requests skip the server this long
};

}  // namespace ghostline::daemon::remote
