#include "lsp/json_rpc.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ghostline::lsp {
namespace {

// A parsed message and its envelope, whose params point into it.
struct Read {
  explicit Read(std::string_view text, bool accept_responses = true)
      : message(nlohmann::json::parse(text)), envelope(read_envelope(message, accept_responses)) {}
  nlohmann::json message;
  Envelope envelope;
};

TEST(Envelope, RequestsAndNotificationsCarryTheirMethodAndParams) {
  const Read read_request(R"({"jsonrpc":"2.0","id":"a","method":"shutdown","params":[1]})");
  const Envelope& request = read_request.envelope;
  EXPECT_EQ(request.kind, Envelope::Kind::Request);
  EXPECT_EQ(request.id, "a");
  EXPECT_EQ(request.method, "shutdown");
  EXPECT_EQ(*request.params, nlohmann::json::array({1}));
  const Read read_notification(R"({"jsonrpc":"2.0","method":"exit"})");
  const Envelope& notification = read_notification.envelope;
  EXPECT_EQ(notification.kind, Envelope::Kind::Notification);
  EXPECT_TRUE(notification.id.is_null());
  // No params, or null ones, read as an empty object.
  EXPECT_EQ(*notification.params, nlohmann::json::object());
  const Read null_params(R"({"jsonrpc":"2.0","id":7,"method":"x","params":null})");
  EXPECT_EQ(*null_params.envelope.params, nlohmann::json::object());
}

TEST(Envelope, ResponsesAreTakenOnlyWhenAccepted) {
  EXPECT_EQ(Read(R"({"jsonrpc":"2.0","id":9,"result":{}})").envelope.kind,
            Envelope::Kind::Response);
  EXPECT_EQ(Read(R"({"jsonrpc":"2.0","id":9,"error":{}})").envelope.kind,
            Envelope::Kind::Response);
  // Before authentication nothing but initialize is taken: a response is invalid.
  const Envelope refused = Read(R"({"jsonrpc":"2.0","id":9,"result":{}})", false).envelope;
  EXPECT_EQ(refused.kind, Envelope::Kind::Invalid);
  EXPECT_EQ(refused.id, 9);
  EXPECT_EQ(refused.problem, "message has an id but neither a method nor a result or an error");
}

TEST(Envelope, InvalidMessagesSayWhatIsWrongAndWhichIdToAnswer) {
  struct Case {
    std::string_view message;
    nlohmann::json id;
    std::string_view problem;
  };
  const Case cases[] = {
      {R"([{"jsonrpc":"2.0","method":"exit"}])", nullptr,
       "JSON-RPC batches are not supported by LSP"},
      {R"("exit")", nullptr, "a message must be a JSON object"},
      {R"({"jsonrpc":"2.0","id":2})", 2,
       "message has an id but neither a method nor a result or an error"},
      {R"({"jsonrpc":"2.0","id":[2]})", nullptr,
       "message has an id but neither a method nor a result or an error"},
      {R"({"jsonrpc":"2.0","params":{}})", nullptr, "message has no method"},
      {R"({"jsonrpc":"2.0","id":null,"method":"shutdown"})", nullptr,
       "id must be an integer or a string"},
      {R"({"jsonrpc":"2.0","id":1.5,"method":"shutdown"})", nullptr,
       "id must be an integer or a string"},
      {R"({"jsonrpc":"1.0","id":3,"method":"shutdown"})", 3, "'jsonrpc' must be \"2.0\""},
      {R"({"id":"x","method":"shutdown"})", "x", "'jsonrpc' must be \"2.0\""},
      {R"({"jsonrpc":2.0,"id":5,"method":"shutdown"})", 5, "'jsonrpc' must be \"2.0\""},
      {R"({"jsonrpc":"2.0","method":["exit"]})", nullptr, "method must be a string"},
      {R"({"jsonrpc":"2.0","id":7,"method":"ghostline/stats","params":"all"})", 7,
       "params of 'ghostline/stats' must be an object or an array"},
      {R"({"jsonrpc":"2.0","method":"textDocument/didClose","params":3})", nullptr,
       "params of 'textDocument/didClose' must be an object or an array"},
  };
  for (const auto& c : cases) {
    const Envelope e = Read(c.message).envelope;
    EXPECT_EQ(e.kind, Envelope::Kind::Invalid) << c.message;
    EXPECT_EQ(e.id, c.id) << c.message;
    EXPECT_EQ(e.problem, c.problem) << c.message;
  }
}

TEST(JsonRpc, MessagesHaveTheSpecShape) {
  auto e = make_error(7, ErrorCode::RequestCancelled, "gone");
  EXPECT_EQ(e["jsonrpc"], "2.0");
  EXPECT_EQ(e["id"], 7);
  EXPECT_EQ(e["error"]["code"], -32800);
  auto n = make_notification("window/logMessage", {{"type", 1}});
  EXPECT_FALSE(n.contains("id"));
}

}  // namespace
}  // namespace ghostline::lsp
