// `ghostline stats`: what became of the completions the editors showed, per language and model,
// read from a running daemon (ghostline/stats). It talks to the daemon through `ghostline
// connect --no-start`, so that it finds the same socket, makes the same checks of its directory
// and owner, and sends the same token as the editors do; it never starts a daemon.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/cli/arg_parser.h"
#include "daemon/cli/commands.h"
#include "lsp/client_connection.h"

namespace ghostline::daemon {
namespace {

using nlohmann::json;
using Clock = lsp::ClientConnection::Clock;

// The response to request `id`, skipping notifications; throws when none comes in time.
json response_to(lsp::ClientConnection& conn, int id, Clock::time_point deadline) {
  while (auto r = conn.receive(deadline)) {
    const json& m = r->message;
    if (!m.contains("id") || m["id"] != id || m.contains("method")) continue;
    if (m.contains("error"))
      throw std::runtime_error("the daemon answered with an error: " +
                               m["error"].value("message", m["error"].dump()));
    return m.value("result", json());
  }
  throw std::runtime_error(conn.closed() ? "no running daemon answered (see the message above)"
                                         : "the daemon did not answer in time");
}

std::string number(const json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v.get<double>());
  return buf;
}

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

// A plain-text table: the first row is the header; columns after the first two are right-aligned.
std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c > 0) line += "  ";
      line += c < 2 ? row[c] + pad : pad + row[c];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

// The table `ghostline stats` prints from ghostline/stats's "outcomes".
std::string format_outcome_table(const json& outcomes) {
  std::vector<std::vector<std::string>> rows = {{"language", "model", "shown", "accepted", "partly",
                                                 "rate", "chars", "dismissed", "typed over",
                                                 "mean ms", "p50 ms", "p90 ms"}};
  for (const json& r : outcomes) {
    const uint64_t shown = r.value("shown", uint64_t{0});
    const uint64_t accepted = r.value("accepted", uint64_t{0});
    const uint64_t partly = r.value("acceptedPartially", uint64_t{0});
    const json latency = r.value("acceptedLatencyMs", json());
    auto latency_of = [&](const char* key) {
      return latency.is_object() ? number(latency.value(key, json())) : "-";
    };
    rows.push_back({r.value("language", "?"), r.value("model", "?"), std::to_string(shown),
                    std::to_string(accepted), std::to_string(partly),
                    percent(accepted + partly, shown),
                    std::to_string(r.value("acceptedChars", uint64_t{0})),
                    std::to_string(r.value("dismissed", uint64_t{0})),
                    std::to_string(r.value("typedOver", uint64_t{0})), latency_of("mean"),
                    latency_of("p50"), latency_of("p90")});
  }
  return format_table(rows);
}

}  // namespace

int stats_main(std::span<char* const> args) {
  std::string address, token_env;
  bool as_json = false;
  int wait_s = 10;
  ArgParser p(
      "ghostline stats",
      "What became of the completions the editors showed (as their plugins report it), per\n"
      "language and model: shown, accepted whole or in part (rate: either, of shown), the\n"
      "characters kept, dismissed, typed over, and the latency of the accepted ones. Reads a\n"
      "running daemon through `ghostline connect --no-start`; the counts stay on this machine\n"
      "and start again with each daemon.");
  p.positional("ADDR", "unix:PATH or tcp:HOST:PORT (default: the socket `ghostline connect` uses)",
               &address, false);
  p.option("--auth-token-env", "VAR",
           "for tcp: the token in environment variable VAR (as connect takes it)", &token_env);
  p.flag("--json", "print the daemon's whole ghostline/stats answer as JSON", &as_json);
  p.option("--wait", "SECONDS", "how long to wait for the daemon's answers", &wait_s);
  if (auto exit = p.parse(args)) return *exit;

  std::unique_ptr<lsp::ClientConnection> conn;
  int code = 0;
  try {
    std::vector<std::string> argv = {self_executable(), "connect", "--no-start"};
    if (!token_env.empty()) argv.insert(argv.end(), {"--auth-token-env", token_env});
    if (!address.empty()) argv.push_back(address);
    conn = lsp::ClientConnection::spawn(argv);
    const auto deadline = Clock::now() + std::chrono::seconds(wait_s);
    conn->send({{"jsonrpc", "2.0"},
                {"id", 1},
                {"method", "initialize"},
                {"params", {{"processId", nullptr}, {"capabilities", json::object()}}}});
    response_to(*conn, 1, deadline);
    conn->send({{"jsonrpc", "2.0"}, {"method", "initialized"}, {"params", json::object()}});
    conn->send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ghostline/stats"}, {"params", nullptr}});
    const json stats = response_to(*conn, 2, deadline);
    conn->send({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "shutdown"}, {"params", nullptr}});
    response_to(*conn, 3, deadline);
    conn->send({{"jsonrpc", "2.0"}, {"method", "exit"}, {"params", nullptr}});
    if (as_json) {
      std::printf("%s\n", stats.dump(2).c_str());
    } else {
      std::printf("daemon: %s\n", stats.value("completer", "?").c_str());
      const json outcomes = stats.value("outcomes", json::array());
      if (outcomes.empty())
        std::printf(
            "no completion outcomes reported yet (the VS Code and Neovim plugins report them)\n");
      else
        std::fputs(format_outcome_table(outcomes).c_str(), stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ghostline stats: %s\n", e.what());
    code = 1;
  }
  if (conn) conn->finish(std::chrono::milliseconds(2000));
  return code;
}

}  // namespace ghostline::daemon
