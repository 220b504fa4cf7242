// The LSP base protocol: messages found wherever the reads end, every malformed header or body
// reported without losing the messages after it, what the server's transport records and what
// it writes.
#include "lsp/transport.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lsp/recorder.h"

namespace ghostline::lsp {
namespace {

using nlohmann::json;

std::vector<std::string> bodies(const std::vector<FrameDecoder::Event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events)
    out.push_back(std::holds_alternative<std::string>(e)
                      ? std::get<std::string>(e)
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

// Writes down what the transport hands it, as one line each.
class Handler : public MessageHandler {
 public:
  void on_message(const json& message) override {
    seen.push_back(message.dump());
    if (message.is_object() && message.value("method", "") == "exit") exited_ = true;
  }
  void on_malformed(ErrorCode code, const std::string& problem) override {
    seen.push_back(std::to_string(static_cast<int>(code)) + " " + problem);
  }
  void on_disconnect() override { seen.push_back("disconnected"); }
  bool exited() const override { return exited_; }

  std::vector<std::string> seen;

 private:
  bool exited_ = false;
};

class Frames : public FrameSink {
 public:
  void write(std::string frame) override { written += frame; }
  void close() override { closed = true; }
  std::string written;
  bool closed = false;
};

TEST(JsonTransport, MessagesArriveWholeWhereverTheReadsEnd) {
  const std::string stream = encode_frame(R"({"a":1})") + encode_frame("[2]") +
                             encode_frame(R"({"text":"\u00e9 ]}"})");
  const std::vector<std::string> expected = {R"({"a":1})", "[2]", R"({"text":"é ]}"})"};
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    Frames out;
    JsonTransport transport(1, out, 1024, nullptr);
    Handler handler;
    transport.feed(std::string_view(stream).substr(0, cut), handler);
    transport.feed(std::string_view(stream).substr(cut), handler);
    EXPECT_EQ(handler.seen, expected) << "cut at " << cut;
  }
  // Byte by byte.
  Frames out;
  JsonTransport transport(1, out, 1024, nullptr);
  Handler handler;
  for (char c : stream) transport.feed(std::string_view(&c, 1), handler);
  EXPECT_EQ(handler.seen, expected);
}

TEST(JsonTransport, BytesThatCarryNoMessageAreReportedAndTheNextMessageStillArrives) {
  Frames out;
  JsonTransport transport(1, out, 200, nullptr);
  Handler handler;
  transport.feed(encode_frame(std::string(300, ' ')) + encode_frame("{") +
                     encode_frame(std::string(65, '[') + std::string(65, ']')) +
                     encode_frame("\"\xff\"") + "X-Other: 1\r\n\r\n" + encode_frame("{}"),
                 handler);
  EXPECT_EQ(handler.seen,
            (std::vector<std::string>{
                "-32700 message body of 300 bytes exceeds the limit of 200 bytes "
                "(--max-message-mib); skipped",
                "-32700 message is not valid JSON (or not valid UTF-8)",
                "-32600 message nests arrays or objects deeper than 64 levels",
                "-32700 message is not valid JSON (or not valid UTF-8)",
                "-32700 message without a Content-Length header",
                "{}",
            }));
}

TEST(JsonTransport, NothingIsHandedOnOnceTheHandlerHasExited) {
  Frames out;
  JsonTransport transport(1, out, 1024, nullptr);
  Handler handler;
  transport.feed(encode_frame(R"({"method":"exit"})") + encode_frame("{}") + "garbage\r\n\r\n",
                 handler);
  EXPECT_EQ(handler.seen, (std::vector<std::string>{R"({"method":"exit"})"}));
  transport.disconnect(handler);
  EXPECT_EQ(handler.seen.back(), "disconnected");
}

TEST(JsonTransport, SendsFramedMessagesWithInvalidUtf8Replaced) {
  Frames out;
  JsonTransport transport(1, out, 1024, nullptr);
  transport.send({{"text", "a\xff"}});
  EXPECT_EQ(out.written, "Content-Length: 15\r\n\r\n{\"text\":\"a\xef\xbf\xbd\"}");
  EXPECT_FALSE(out.closed);
  transport.close();
  EXPECT_TRUE(out.closed);
}

TEST(JsonTransport, RecordsEveryBodyWithoutTheAuthToken) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ghostline-transport-test-" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(path);
  {
    Recorder recorder(path.string());
    Frames out;
    JsonTransport transport(7, out, 1024, &recorder);
    Handler handler;
    const json initialize = {
        {"jsonrpc", "2.0"},
        {"id", 1},
        {"method", "initialize"},
        {"params", {{"initializationOptions", {{"authToken", "s3cret"}, {"debounceMs", 0}}}}}};
    transport.feed(encode_frame(initialize.dump()) + encode_frame("nope") +
                       encode_frame(std::string(65, '[') + std::string(65, ']')),
                   handler);
  }
  std::ifstream in(path);
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  std::filesystem::remove(path);
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) EXPECT_EQ(line["session"], 7);
  EXPECT_EQ(lines[0]["message"]["params"]["initializationOptions"],
            (json{{"authToken", "<redacted>"}, {"debounceMs", 0}}));
  EXPECT_EQ(lines[1]["raw"], "nope");
  EXPECT_EQ(lines[2]["raw"], std::string(65, '[') + std::string(65, ']'));
}

}  // namespace
}  // namespace ghostline::lsp
