#include "lsp/json_rpc.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ghostline::lsp {
namespace {

std::vector<std::string> bodies(const std::vector<FrameDecoder::Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events)
    out.push_back(std::holds_alternative<std::string>(e) ? std::get<std::string>(e)
                                                        : "ERROR: " + std::get<FramingError>(e).message);
  return out;
}

TEST(FrameDecoder, SplitsAtEveryByteBoundary) {
  std::string stream = encode_frame(R"({"a":1})") + encode_frame("{}") +
                       "content-length:  3 \r\nContent-Type: x\r\n\r\n[1]";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    FrameDecoder d(1024);
    auto first = bodies(d.feed(std::string_view(stream).substr(0, cut)));
    auto rest = bodies(d.feed(std::string_view(stream).substr(cut)));
    first.insert(first.end(), rest.begin(), rest.end());
    EXPECT_EQ(first, (std::vector<std::string>{R"({"a":1})", "{}", "[1]"})) << "cut at " << cut;
    EXPECT_FALSE(d.mid_message());
  }
}

TEST(FrameDecoder, SkipsOversizedBodiesAndKeepsGoing) {
  FrameDecoder d(10);
  std::string big(100, 'x');
  auto events = bodies(d.feed(encode_frame(big).substr(0, 40)));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("exceeds the limit of 10 bytes"), std::string::npos);
  EXPECT_TRUE(d.mid_message());
  events = bodies(d.feed(encode_frame(big).substr(40) + encode_frame("{}")));
  EXPECT_EQ(events, (std::vector<std::string>{"{}"}));
}

TEST(FrameDecoder, ReportsMissingAndInvalidLengths) {
  FrameDecoder d(1024);
  auto events = bodies(d.feed("X-Other: 1\r\n\r\n" + encode_frame("{}")));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "ERROR: message without a Content-Length header");
  EXPECT_EQ(events[1], "{}");
  events = bodies(d.feed("Content-Length: -5\r\n\r\n" + encode_frame("[]")));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "ERROR: invalid Content-Length '-5'");
  EXPECT_EQ(events[1], "[]");
}

TEST(FrameDecoder, ConflictingLengthsAreAnErrorAndEqualOnesAreNot) {
  FrameDecoder d(1024);
  auto events =
      bodies(d.feed("Content-Length: 2\r\nContent-Length: 7\r\n\r\n{}" + encode_frame("[]")));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "ERROR: conflicting Content-Length headers '2' and '7'");
  EXPECT_EQ(events[1], "[]");
  events = bodies(d.feed("Content-Length: 2\r\ncontent-length: 2\r\n\r\n{}"));
  EXPECT_EQ(events, (std::vector<std::string>{"{}"}));
  EXPECT_FALSE(d.mid_message());
}

TEST(FrameDecoder, EndlessHeaderIsReportedNotBuffered) {
  FrameDecoder d(1024);
  auto events = bodies(d.feed(std::string(5000, 'h')));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("header block longer"), std::string::npos);
  EXPECT_EQ(bodies(d.feed(encode_frame("{}"))), (std::vector<std::string>{"{}"}));
}

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
