// `ghostline serve`: the LSP server.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/engine_flags.h"
#include "daemon/pipeline/completion_service.h"
#include "daemon/cli/logging.h"
#include "daemon/pipeline/memo_completer.h"
#include "daemon/pipeline/scripted_completer.h"
#include "lsp/recorder.h"
#include "lsp/server.h"

namespace ghostline::daemon {

int serve_main(std::span<char* const> args) {
  std::string listen, log_level = "info", log_file, record, auth_token;
  bool stdio = false, allow_remote = false, no_prefetch = false;
  int max_message_mib = 16, scripted_steps = -1;
  lsp::ServerOptions server;
  EngineOptions engine;

  ArgParser p("ghostline serve",
              "Runs the LSP server. Editors start it on stdio; with --listen it accepts several\n"
              "editors at once on a TCP or unix socket, each with its own session, sharing one model.");
  p.option("--listen", "ADDR", "tcp:HOST:PORT, tcp:PORT (loopback) or unix:PATH instead of stdio", &listen);
  p.flag("--stdio", "serve on stdin/stdout (the default; accepted for LSP clients that pass it)", &stdio);
  p.flag("--allow-remote", "allow a non-loopback TCP address (needs --auth-token)", &allow_remote);
  p.option("--auth-token", "TOKEN",
           "clients must send initializationOptions.authToken = TOKEN (also from $GHOSTLINE_AUTH_TOKEN)",
           &auth_token);
  add_engine_options(p, engine);
  p.option("--debounce-ms", "MS", "wait this long for a newer keystroke before completing",
           &server.defaults.debounce_ms);
  p.option("--max-tokens", "N", "longest completion in tokens (0: " + std::to_string(kDefaultMaxTokens) + ")",
           &server.defaults.max_tokens);
  p.option("--deadline-ms", "MS",
           "reply with what is done after this long (0: " + std::to_string(kDefaultDeadlineMs) + ")",
           &server.defaults.deadline_ms);
  p.option("--max-message-mib", "MIB", "largest LSP message accepted", &max_message_mib);
  p.option("--log-level", "LEVEL", "trace, debug, info, warn, error or off", &log_level);
  p.option("--log-file", "FILE", "write the log here instead of stderr (never stdout)", &log_file);
  p.option("--record", "FILE", "append every incoming message, timestamped, as JSON lines", &record);
  p.option("--scripted-completer", "STEPS",
           "answer without a model, after STEPS 1 ms steps (for protocol tests; -1: off)", &scripted_steps);
  p.flag("--no-prefetch", "do not compute the next completion in idle time after one is shown",
         &no_prefetch);
  if (auto exit = p.parse(args)) return *exit;

  try {
    setup_logging(log_level, log_file);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline serve: %s\n", e.what());
    return 2;
  }
  if (auth_token.empty())
    if (const char* env = std::getenv("GHOSTLINE_AUTH_TOKEN")) auth_token = env;
  server.auth_token = auth_token;
  if (max_message_mib < 1 || max_message_mib > 1024) {
    std::fprintf(stderr, "ghostline serve: --max-message-mib must be in [1, 1024]\n");
    return 2;
  }
  server.max_message_bytes = static_cast<size_t>(max_message_mib) << 20;

  std::optional<lsp::ListenAddress> address;
  if (!listen.empty()) {
    if (stdio) {
      std::fprintf(stderr, "ghostline serve: --stdio and --listen exclude each other\n");
      return 2;
    }
    try {
      address = lsp::parse_listen_address(listen);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ghostline serve: %s\n", e.what());
      return 2;
    }
    if (address->kind == lsp::ListenAddress::Kind::Tcp && !lsp::is_loopback_host(address->host)) {
      if (!allow_remote || auth_token.empty()) {
        std::fprintf(stderr,
                     "ghostline serve: refusing to listen on non-loopback address %s: anyone on the "
                     "network could read your code. Pass --allow-remote and --auth-token TOKEN to do it.\n",
                     address->host.c_str());
        return 2;
      }
    }
  }

  std::unique_ptr<lsp::Recorder> recorder;
  std::unique_ptr<lsp::Completer> completer;
  try {
    if (!record.empty()) recorder = std::make_unique<lsp::Recorder>(record);
    if (scripted_steps >= 0) {
      completer = std::make_unique<ScriptedCompleter>(scripted_steps);
    } else {
      completer = make_completion_service(engine);
    }
    // Typing through a completion is answered from memory; accepting one finds the next ready.
    completer = std::make_unique<MemoCompleter>(std::move(completer), !no_prefetch);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    std::fprintf(stderr, "ghostline serve: %s\n", e.what());
    return 1;
  }
  spdlog::info("ghostline {} serving on {} with {}", GHOSTLINE_VERSION, listen.empty() ? "stdio" : listen,
               completer->describe());

  int code = 0;
  {
    lsp::Server srv(*completer, server, recorder.get());
    try {
      code = address ? srv.run_listen(*address) : srv.run_stdio();
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      std::fprintf(stderr, "ghostline serve: %s\n", e.what());
      code = 1;
    }
    if (!address) {
      // The stdin reader thread may still be blocked in read(); end the process here.
      spdlog::shutdown();
      std::fflush(nullptr);
      ::_exit(code);
    }
  }
  spdlog::shutdown();
  return code;
}

}  // namespace ghostline::daemon
