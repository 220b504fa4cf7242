// `ghostline replay`: drives the real daemon over LSP with recorded typing sessions, with their
// original timing or as fast as the daemon answers, and reports latency as the person felt it.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/commands.h"
#include "lsp/client_connection.h"
#include "daemon/replay/replayer.h"
#include "daemon/replay/report.h"
#include "daemon/replay/typing_session.h"
#include "lsp/text_document.h"
#include "base/clock.h"

namespace ghostline::daemon {
namespace {

using nlohmann::json;

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

int replay_main(std::span<char* const> args) {
  std::vector<std::string> paths;
  std::string speed_text = "1.0", daemon_cmd, connect, json_path, svg_path, model, daemon_log,
              serve_args, settings_text;
  int threads = 0;
  double timeout_s = 60;
  bool quiet = false;
  ArgParser p(
      "ghostline replay",
      "Replays recorded typing sessions (tools/replay/FORMAT.md) against the real daemon over\n"
      "LSP and reports keystroke-to-reply latency, pipeline stages, cancellations, prefill and\n"
      "cache reuse, and how many completions the person would have accepted. Without --daemon\n"
      "or --connect it starts `ghostline serve` itself.");
  p.rest("SESSION", "session files, or folders of *.jsonl session files", &paths);
  p.option("--speed", "X",
           "1.0: the recorded timing; 2: twice as fast; step: each keystroke once the previous "
           "request is answered; max: all keystrokes at once, the daemon cancels what it cannot "
           "keep up with",
           &speed_text);
  p.option("--daemon", "CMD", "shell command that starts a daemon speaking LSP on stdio",
           &daemon_cmd);
  p.option("--connect", "ADDR", "use a running daemon at unix:PATH or tcp:HOST:PORT", &connect);
  p.option("-m,--model", "FILE", "model for the daemon it starts (default: the daemon's default)",
           &model);
  p.option("-t,--threads", "N", "threads of the daemon it starts (0: all cores)", &threads);
  p.option("--daemon-log", "FILE", "log file of the daemon it starts (default: its stderr)",
           &daemon_log);
  p.option("--serve-args", "ARGS",
           "more options for the daemon it starts, e.g. \"--max-tokens 16\"", &serve_args);
  p.option("--settings", "JSON",
           "initializationOptions sent to the daemon, e.g. '{\"debounceMs\":0}'", &settings_text);
  p.option("--timeout", "SECONDS", "longest wait for any one reply", &timeout_s);
  p.option("--json", "FILE", "write the full report as JSON", &json_path);
  p.option("--svg", "FILE", "write a plot: latency over time and its CDF", &svg_path);
  p.flag("-q,--quiet", "no progress on stderr", &quiet);
  if (auto exit = p.parse(args)) return *exit;

  ReplayOptions options;
  options.request_timeout_s = timeout_s;
  options.progress = !quiet;
  if (speed_text == "max") {
    options.pace = ReplayOptions::Pace::Max;
  } else if (speed_text == "step") {
    options.pace = ReplayOptions::Pace::Step;
  } else {
    try {
      size_t used = 0;
      options.speed = std::stod(speed_text, &used);
      if (used != speed_text.size() || !(options.speed > 0)) throw std::invalid_argument("speed");
    } catch (const std::exception&) {
      std::fprintf(
          stderr,
          "ghostline replay: --speed must be a positive number, 'step' or 'max', not '%s'\n",
          speed_text.c_str());
      return 2;
    }
  }
  if (!settings_text.empty()) {
    options.settings = json::parse(settings_text, nullptr, false);
    if (!options.settings.is_object()) {
      std::fprintf(stderr, "ghostline replay: --settings must be a JSON object\n");
      return 2;
    }
  }
  if (!daemon_cmd.empty() && !connect.empty()) {
    std::fprintf(stderr, "ghostline replay: --daemon and --connect exclude each other\n");
    return 2;
  }
  if (paths.empty()) {
    std::fprintf(stderr, "ghostline replay: no session files given\n\n%s", p.help().c_str());
    return 2;
  }

  std::vector<Session> sessions;
  try {
    for (const auto& path : paths) {
      if (std::filesystem::is_directory(path)) {
        std::vector<std::string> files;
        for (const auto& entry : std::filesystem::directory_iterator(path))
          if (entry.path().extension() == ".jsonl") files.push_back(entry.path().string());
        std::sort(files.begin(), files.end());
        if (files.empty()) throw std::runtime_error("no *.jsonl session files in " + path);
        for (const auto& f : files) sessions.push_back(load_session(f));
      } else {
        sessions.push_back(load_session(path));
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline replay: %s\n", e.what());
    return 2;
  }

  std::signal(SIGPIPE, SIG_IGN);
  ReplayReport report;
  std::string daemon_description;
  std::unique_ptr<lsp::ClientConnection> conn;
  try {
    if (!connect.empty()) {
      conn = lsp::ClientConnection::connect(lsp::parse_listen_address(connect));
      daemon_description = connect;
    } else if (!daemon_cmd.empty()) {
      conn = lsp::ClientConnection::spawn({"/bin/sh", "-c", "exec " + daemon_cmd});
      daemon_description = daemon_cmd;
    } else {
      std::vector<std::string> argv = {self_executable(), "serve"};
      if (!model.empty()) argv.insert(argv.end(), {"--model", model});
      if (threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(threads)});
      if (!daemon_log.empty()) argv.insert(argv.end(), {"--log-file", daemon_log});
      for (auto& w : split_words(serve_args)) argv.push_back(w);
      conn = lsp::ClientConnection::spawn(argv);
      daemon_description = "ghostline serve";
      for (size_t k = 2; k < argv.size(); ++k) daemon_description += " " + argv[k];
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline replay: %s\n", e.what());
    return 1;
  }
  report.settings = {{"speed", options.pace == ReplayOptions::Pace::Timed ? json(options.speed)
                                                                          : json(speed_text)},
                     {"daemon", daemon_description},
                     {"initializationOptions", options.settings},
                     {"version", GHOSTLINE_VERSION}};

  int code = 0;
  Replayer replayer(*conn, report, options);
  try {
    replayer.initialize(sessions.front().position_encoding);
    for (size_t k = 0; k < sessions.size(); ++k)
      replayer.run(sessions[k], static_cast<int>(k), static_cast<int>(sessions.size()));
    replayer.shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nghostline replay: %s\n", e.what());
    code = 1;
  }
  int daemon_exit = conn->finish(std::chrono::milliseconds(5000));
  report.settings["daemonExitCode"] = daemon_exit;

  std::string table = format_table(report);
  std::fputs(table.c_str(), stdout);
  json j = to_json(report);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << j.dump(1) << "\n";
    if (!out) {
      std::fprintf(stderr, "ghostline replay: cannot write %s\n", json_path.c_str());
      code = 1;
    }
  }
  if (!svg_path.empty()) {
    std::ofstream out(svg_path);
    out << render_svg(report);
    if (!out) {
      std::fprintf(stderr, "ghostline replay: cannot write %s\n", svg_path.c_str());
      code = 1;
    }
  }
  if (code == 0 && !j["problems"].empty()) code = 1;
  return code;
}

}  // namespace ghostline::daemon
