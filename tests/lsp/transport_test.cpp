// The LSP base protocol's framing: messages found wherever the reads end, and every malformed
// header reported without losing the messages after it.
#include "lsp/transport.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ghostline::lsp {
namespace {

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

}  // namespace
}  // namespace ghostline::lsp
