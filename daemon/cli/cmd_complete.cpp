// `ghostline complete FILE:LINE:COL`: prints the completion the daemon would show there, with
// its timing. The quickest way to see the model work without an editor.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/engine_flags.h"
#include "daemon/pipeline/completion_service.h"
#include "daemon/cli/logging.h"
#include "lsp/text_document.h"

namespace ghostline::daemon {

int complete_main(std::span<char* const> args) {
  std::string where, log_level = "warn";
  EngineOptions engine;
  int max_tokens = 0, deadline_ms = 0, repeat = 1;
  bool json_out = false, automatic = false;
  ArgParser p(
      "ghostline complete",
      "Prints the completion Ghostline would show at a position of a file, and how long it\n"
      "took. LINE and COL count from 1; COL counts characters. Without :LINE:COL the cursor\n"
      "is at the end of the file.");
  p.positional("FILE[:LINE:COL]", "the file and the cursor position", &where);
  add_engine_options(p, engine);
  p.option("--max-tokens", "N",
           "longest completion in tokens (0: " + std::to_string(kDefaultMaxTokens) + ")",
           &max_tokens);
  p.option("--deadline-ms", "MS",
           "stop generating after this long (0: " + std::to_string(kDefaultDeadlineMs) + ")",
           &deadline_ms);
  p.option("--repeat", "N", "complete N times (the first warms the cache; later ones show reuse)",
           &repeat);
  p.flag("--json", "print the result and statistics as JSON", &json_out);
  p.flag("--automatic",
         "ask as an editor does while the user types: where nothing should be completed (in the "
         "middle of a "
         "word, in a comment or string), nothing is; without it, as when the user asks explicitly",
         &automatic);
  p.option("--log-level", "LEVEL", "trace, debug, info, warn, error or off", &log_level);
  if (auto exit = p.parse(args)) return *exit;
  try {
    setup_logging(log_level, "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline complete: %s\n", e.what());
    return 2;
  }

  std::string file = where;
  long line = -1, col = -1;
  // FILE:LINE:COL; a file name may itself contain colons, so parse from the right.
  if (auto c2 = where.rfind(':'); c2 != std::string::npos) {
    auto c1 = where.rfind(':', c2 - 1);
    if (c1 != std::string::npos && c1 < c2) {
      char* end1 = nullptr;
      char* end2 = nullptr;
      std::string l = where.substr(c1 + 1, c2 - c1 - 1), c = where.substr(c2 + 1);
      long lv = std::strtol(l.c_str(), &end1, 10), cv = std::strtol(c.c_str(), &end2, 10);
      if (!l.empty() && !c.empty() && *end1 == 0 && *end2 == 0) {
        file = where.substr(0, c1);
        line = lv;
        col = cv;
      }
    }
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "ghostline complete: cannot read '%s'\n", file.c_str());
    return 1;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  lsp::TextDocument doc("file://" + file, "", 1, buffer.str());
  size_t cursor = doc.text().size();
  if (line >= 0) {
    if (line < 1 || col < 1) {
      std::fprintf(stderr, "ghostline complete: LINE and COL count from 1\n");
      return 2;
    }
    auto off = doc.offset_of({line - 1, col - 1}, lsp::PositionEncoding::Utf32);
    if (!off) {
      std::fprintf(stderr, "ghostline complete: %s has %zu lines; line %ld is past the end\n",
                   file.c_str(), doc.line_count(), line);
      return 1;
    }
    cursor = *off;
  }

  std::unique_ptr<lsp::Completer> completer;
  try {
    completer = make_completion_service(engine);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline complete: %s\n", e.what());
    return 1;
  }
  if (!completer->ready()) {
    std::fprintf(stderr, "ghostline complete: %s\n", completer->describe().c_str());
    return 1;
  }
  lsp::CompletionRequest request;
  request.uri = "file://" + file;
  request.text = doc.text();
  request.cursor = cursor;
  request.max_tokens = max_tokens;
  request.deadline_ms = deadline_ms;
  request.trigger = automatic ? lsp::TriggerKind::Automatic : lsp::TriggerKind::Invoked;
  lsp::CancelToken never;
  for (int i = 0; i < std::max(1, repeat); ++i) {
    lsp::CompletionResult r;
    try {
      r = completer->complete(request, never);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ghostline complete: %s\n", e.what());
      return 1;
    }
    const nlohmann::json& stats = r.stats;
    if (json_out) {
      std::printf("%s\n",
                  nlohmann::json({{"completion", r.insert_text}, {"stats", stats}}).dump().c_str());
      continue;
    }
    if (i == 0) {
      // The line up to the cursor, then the ghost text in grey where a terminal shows it.
      size_t line_start = doc.text().rfind('\n', cursor == 0 ? 0 : cursor - 1);
      line_start = (line_start == std::string::npos || cursor == 0) ? 0 : line_start + 1;
      bool tty = isatty(fileno(stdout));
      std::printf("%s%s%s%s\n", doc.text().substr(line_start, cursor - line_start).c_str(),
                  tty ? "\x1b[90m" : "", r.insert_text.c_str(), tty ? "\x1b[0m" : "");
    }
    std::fprintf(
        stderr,
        "[%d] %s prompt tokens, %s reused, %s prefilled, %s generated; prefill %.1f ms, decode "
        "%.1f ms, total %.1f ms (stop: %s)\n",
        i + 1, stats.value("promptTokens", nlohmann::json(0)).dump().c_str(),
        stats.value("matchedTokens", nlohmann::json(0)).dump().c_str(),
        stats.value("prefilledTokens", nlohmann::json(0)).dump().c_str(),
        stats.value("generatedTokens", nlohmann::json(0)).dump().c_str(),
        stats.value("prefillMs", 0.0), stats.value("decodeMs", 0.0), stats.value("totalMs", 0.0),
        stats.value("stop", std::string("?")).c_str());
  }
  return 0;
}

}  // namespace ghostline::daemon
