// `ghostline serve`: the LSP server.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/engine_flags.h"
#include "daemon/cli/logging.h"
#include "daemon/pipeline/completion_service.h"
#include "daemon/pipeline/memo_completer.h"
#include "daemon/pipeline/scripted_completer.h"
#include "daemon/pipeline/syntax_context.h"
#include "engine/gguf/mapped_file_faults.h"
#include "lsp/auth_token.h"
#include "lsp/private_dir.h"
#include "lsp/recorder.h"
#include "lsp/server.h"

namespace ghostline::daemon {

namespace {
// Requests per second of one socket session by default: far above what typing produces.
constexpr double kDefaultSocketRequestRate = 200;
}  // namespace

int serve_main(std::span<char* const> args) {
  std::string listen, log_level = "info", log_file, record, auth_token_env, auth_token_argv;
  bool stdio = false, allow_remote = false, no_prefetch = false;
  int max_message_mib = 16, scripted_steps = -1, max_documents = 1000, max_document_mib = 16;
  double max_requests_per_second = -1;
  lsp::ServerOptions server;
  EngineOptions engine;

  ArgParser p(
      "ghostline serve",
      "Runs the LSP server. Editors start it on stdio; with --listen it accepts several\n"
      "editors at once on a TCP or unix socket, each with its own session, sharing one model.");
  p.option("--listen", "ADDR", "tcp:HOST:PORT, tcp:PORT (loopback) or unix:PATH instead of stdio",
           &listen);
  p.flag("--stdio", "serve on stdin/stdout (the default; accepted for LSP clients that pass it)",
         &stdio);
  p.flag("--allow-remote", "allow a non-loopback TCP address (needs --auth-token-env)",
         &allow_remote);
  p.option(
      "--auth-token-env", "VAR",
      "clients must send the token held in environment variable VAR as\n      "
      "initializationOptions.authToken in initialize, their first message; others are\n      "
      "disconnected. The token is never taken from the command line nor logged. Without\n      "
      "it, a TCP listener generates a token into $XDG_RUNTIME_DIR (or /tmp/ghostline-UID)\n      "
      "/ghostline-tcp-PORT.token, mode 0600, where this user's `ghostline connect` reads it",
      &auth_token_env);
  // Accepted only to explain why it is refused: a token in argv is visible to every user.
  p.option("--auth-token", "TOKEN",
           "refused: use --auth-token-env (a command line is visible to every user)",
           &auth_token_argv);
  add_engine_options(p, engine);
  p.option("--debounce-ms", "MS", "wait this long for a newer keystroke before completing",
           &server.defaults.debounce_ms);
  p.option("--max-tokens", "N",
           "longest completion in tokens (0: " + std::to_string(kDefaultMaxTokens) + ")",
           &server.defaults.max_tokens);
  p.option(
      "--deadline-ms", "MS",
      "reply with what is done after this long (0: " + std::to_string(kDefaultDeadlineMs) + ")",
      &server.defaults.deadline_ms);
  p.option("--max-message-mib", "MIB", "largest LSP message accepted", &max_message_mib);
  p.option("--max-documents", "N", "documents one session may have open; more are refused",
           &max_documents);
  p.option("--max-document-mib", "MIB",
           "largest document accepted; a larger one is refused, one edited past it closed",
           &max_document_mib);
  p.option("--max-requests-per-second", "N",
           "requests one session may make per second, in bursts of up to N; more are\n      "
           "answered with an error. 0: unlimited; -1: 200 with --listen, where one runaway\n      "
           "client would slow every editor sharing the daemon, unlimited on stdio",
           &max_requests_per_second);
  p.option("--log-level", "LEVEL", "trace, debug, info, warn, error or off", &log_level);
  p.option("--log-file", "FILE", "write the log here instead of stderr (never stdout)", &log_file);
  p.option("--record", "FILE", "append every incoming message, timestamped, as JSON lines",
           &record);
  p.option("--scripted-completer", "STEPS",
           "answer without a model, after STEPS 1 ms steps (for protocol tests; -1: off)",
           &scripted_steps);
  p.flag("--no-prefetch", "do not compute the next completion in idle time after one is shown",
         &no_prefetch);
  if (auto exit = p.parse(args)) return *exit;

  try {
    setup_logging(log_level, log_file);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline serve: %s\n", e.what());
    return 2;
  }
  if (!auth_token_argv.empty()) {
    std::fprintf(
        stderr,
        "ghostline serve: --auth-token is refused: every user of this machine can read a command "
        "line. Put the token in an environment variable and pass --auth-token-env VAR.\n");
    return 2;
  }
  std::string auth_token;
  if (!auth_token_env.empty()) {
    const char* value = std::getenv(auth_token_env.c_str());
    if (!value || !*value) {
      std::fprintf(stderr,
                   "ghostline serve: --auth-token-env %s: the variable is not set or empty\n",
                   auth_token_env.c_str());
      return 2;
    }
    auth_token = value;
  }
  server.auth_token = auth_token;
  if (max_message_mib < 1 || max_message_mib > 1024) {
    std::fprintf(stderr, "ghostline serve: --max-message-mib must be in [1, 1024]\n");
    return 2;
  }
  server.max_message_bytes = static_cast<size_t>(max_message_mib) << 20;
  if (max_documents < 1) {
    std::fprintf(stderr, "ghostline serve: --max-documents must be at least 1\n");
    return 2;
  }
  server.max_documents = static_cast<size_t>(max_documents);
  if (max_document_mib < 1 || max_document_mib > 1024) {
    std::fprintf(stderr, "ghostline serve: --max-document-mib must be in [1, 1024]\n");
    return 2;
  }
  server.max_document_bytes = static_cast<size_t>(max_document_mib) << 20;
  if (max_requests_per_second < 0 && max_requests_per_second != -1) {
    std::fprintf(stderr, "ghostline serve: --max-requests-per-second must be -1, 0 or positive\n");
    return 2;
  }
  server.max_requests_per_second = max_requests_per_second >= 0 ? max_requests_per_second
                                   : listen.empty()             ? 0
                                                                : kDefaultSocketRequestRate;

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
        std::fprintf(
            stderr,
            "ghostline serve: refusing to listen on non-loopback address %s: anyone on the "
            "network could read your code. Pass --allow-remote and --auth-token-env VAR to do "
            "it.\n",
            address->host.c_str());
        return 2;
      }
    }
  }

  // The model is mapped, not read: if its file is truncated while the daemon runs, say so and
  // exit instead of dying of SIGBUS without a word.
  if (!engine::install_mapped_file_fault_handler())
    spdlog::warn("this system offers no way to catch a read of a model file truncated while "
                 "mapped: such a read ends the daemon without a message");
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
  spdlog::info("ghostline {} serving on {} with {}", GHOSTLINE_VERSION,
               listen.empty() ? "stdio" : listen, completer->describe());

  // Every local user can reach a loopback port: a TCP listener without a token of the user's
  // own gets one generated here, which this user's clients read from a 0600 file in the private
  // directory (written once the port is known, removed when the daemon stops).
  std::string token_file;
  const bool generate_token =
      address && address->kind == lsp::ListenAddress::Kind::Tcp && server.auth_token.empty();
  if (generate_token) {
    try {
      server.auth_token = lsp::generate_auth_token();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ghostline serve: %s\n", e.what());
      return 1;
    }
  }
  auto write_token_file = [&](const lsp::ListenAddress& bound) {
    if (!generate_token) return;
    const lsp::PrivateDir dir = lsp::default_private_dir();
    lsp::prepare_private_dir(dir);
    const std::string path = lsp::tcp_token_file(dir.path, bound.port);
    lsp::write_secret_file(path, server.auth_token);
    token_file = path;
    spdlog::info("clients authenticate with the token in {}", path);
    std::fprintf(stderr, "ghostline: clients authenticate with the token in %s\n", path.c_str());
  };

  int code = 0;
  {
    // The syntax trees of every session's documents, each request's context (the scripted
    // completer of the protocol tests reads none).
    SyntaxState syntax(/*cross_file=*/true);
    if (scripted_steps < 0) server.document_context = &syntax;
    lsp::Server srv(*completer, server, recorder.get());
    try {
      code = address ? srv.run_listen(*address, write_token_file) : srv.run_stdio();
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      std::fprintf(stderr, "ghostline serve: %s\n", e.what());
      code = 1;
    }
    if (!token_file.empty()) ::unlink(token_file.c_str());
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
