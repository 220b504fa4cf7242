// The socket server with several sessions at once, each on its own client thread, against one
// scheduler and engine thread: the shape the thread sanitizer build checks for races.
#include "lsp/server.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "lsp/client_connection.h"
#include "lsp/protocol.h"
#include "lsp/socket_client.h"

namespace ghostline::lsp {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Completes with the text before the cursor and the version, after a few 1 ms steps.
class EchoCompleter : public Completer {
 public:
  CompletionResult complete(const CompletionRequest& r, const CancelToken& cancel) override {
    for (int i = 0; i < 3; ++i) {
      if (cancel.cancelled()) return {};
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return {"<" + r.text.substr(0, r.cursor) + ">v" + std::to_string(r.version),
            r.cursor,
            r.cursor,
            {}};
  }
  std::string describe() const override { return "echo"; }
};

json reply_to(ClientConnection& c, const json& id) {
  auto deadline = Clock::now() + std::chrono::seconds(20);
  while (auto r = c.receive(deadline))
    if (r->message.contains("id") && r->message["id"] == id && !r->message.contains("method"))
      return r->message;
  ADD_FAILURE() << "no reply to request " << id;
  return {};
}

// One editor: opens a document, types into it, and asks for a completion after each key.
void type_in_a_session(const ListenAddress& address, int n, std::vector<std::string>& problems) {
  auto c = ClientConnection::connect(address);
  c->send(make_request(0, "initialize", {{"capabilities", json::object()}}));
  if (!reply_to(*c, 0).contains("result")) problems.push_back("initialize failed");
  c->send(make_notification("initialized", json::object()));
  const std::string uri = "file:///s" + std::to_string(n) + ".py";
  std::string text;
  c->send(make_notification("textDocument/didOpen",
                            DidOpenTextDocumentParams{{uri, "python", 1, text}}));
  for (int k = 0; k < 20; ++k) {
    const Position at{0, static_cast<int64_t>(text.size())};
    text += static_cast<char>('a' + n);
    c->send(make_notification(
        "textDocument/didChange",
        DidChangeTextDocumentParams{{uri, k + 2}, {{Range{at, at}, std::string(1, 'a' + n)}}}));
    json params = InlineCompletionParams{{uri}, {0, static_cast<int64_t>(text.size())}};
    c->send(make_request(100 + k, "textDocument/inlineCompletion", params));
    json r = reply_to(*c, 100 + k);
    // Answered, or cancelled by the next keystroke's edit; never made from another session's text.
    if (r.contains("result")) {
      for (const auto& item : r["result"]["items"])
        if (item["insertText"] != "<" + text + ">v" + std::to_string(k + 2))
          problems.push_back("session " + std::to_string(n) + ": " + item["insertText"].dump());
    } else if (!r.contains("error") ||
               r["error"]["code"] != static_cast<int>(ErrorCode::RequestCancelled)) {
      problems.push_back("session " + std::to_string(n) + ": " + r.dump());
    }
  }
  c->send(make_request(999, "ghostline/documentText", TextDocumentParams{{uri}}));
  json doc = reply_to(*c, 999);
  if (doc["result"]["text"] != text)
    problems.push_back("session " + std::to_string(n) + ": text " + doc.dump());
  c->finish(std::chrono::milliseconds(1000));
}

TEST(Server, SeveralSocketSessionsShareOneEngineThread) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ghostline-server-test-" + std::to_string(::getpid()) + ".sock");
  std::filesystem::remove(path);
  EchoCompleter completer;
  ServerOptions options;
  options.defaults.debounce_ms = 0;
  Server server(completer, options, nullptr);
  const ListenAddress address{ListenAddress::Kind::Unix, {}, 0, path.string()};
  int code = -1;
  std::thread serving([&] { code = server.run_listen(address); });
  // The path exists from the bind, a moment before the socket listens: wait for a connection.
  auto listening = [&] {
    const int fd = connect_to(address);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  };
  bool up = false;
  for (int i = 0; i < 500 && !(up = listening()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!up) {
    ::kill(::getpid(), SIGTERM);
    serving.join();
    FAIL() << "the server never listened on " << path;
  }
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  std::vector<std::vector<std::string>> problems(4);
  std::vector<std::thread> editors;
  for (int n = 0; n < 4; ++n)
    editors.emplace_back(type_in_a_session, std::cref(address), n, std::ref(problems[n]));
  for (auto& e : editors) e.join();
  for (const auto& p : problems) EXPECT_TRUE(p.empty()) << p.front();

  ::kill(::getpid(), SIGTERM);  // the server's signal set stops it
  serving.join();
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace ghostline::lsp
