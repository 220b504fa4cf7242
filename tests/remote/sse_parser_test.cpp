#include "daemon/remote/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ghostline::daemon::remote {
namespace {

std::vector<SseEvent> parse_in_pieces(std::string_view stream, std::vector<size_t> cuts) {
  std::vector<SseEvent> events;
  SseParser parser([&](const SseEvent& e) {
    events.push_back(e);
    return true;
  });
  size_t pos = 0;
  cuts.push_back(stream.size());
  for (size_t cut : cuts) {
    parser.feed(stream.substr(pos, cut - pos));
    pos = cut;
  }
  parser.finish();
  return events;
}

// What a completion server sends: CRLF and LF line ends, a keep-alive comment, a multi-line
// event, an event type, UTF-8 text.
constexpr std::string_view kStream =
    ": ping\r\n\r\n"
    "data: {\"choices\":[{\"text\":\" {\"}]}\r\n\r\n"
    "event: delta\n"
    "id: 7\n"
    "data: first line\n"
    "data:second line\n\n"
    "data: caf\xC3\xA9 \xE2\x86\x92\r\r"
    "data: [DONE]\n\n";

TEST(SseParser, ParsesEventsOfAServerStream) {
  const auto events = parse_in_pieces(kStream, {});
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].data, "{\"choices\":[{\"text\":\" {\"}]}");
  EXPECT_EQ(events[0].type, "message");
  EXPECT_EQ(events[1].type, "delta");
  EXPECT_EQ(events[1].id, "7");
  EXPECT_EQ(events[1].data, "first line\nsecond line");
  EXPECT_EQ(events[2].data, "caf\xC3\xA9 \xE2\x86\x92");
  EXPECT_EQ(events[3].data, "[DONE]");
}

TEST(SseParser, GivesTheSameEventsWhereverTheStreamIsCut) {
  const auto whole = parse_in_pieces(kStream, {});
  for (size_t cut = 1; cut < kStream.size(); ++cut) {
    const auto split = parse_in_pieces(kStream, {cut});
    ASSERT_EQ(split.size(), whole.size()) << "cut at " << cut;
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(split[i].data, whole[i].data) << "cut at " << cut;
      EXPECT_EQ(split[i].type, whole[i].type) << "cut at " << cut;
    }
  }
  // One byte at a time.
  std::vector<size_t> every;
  for (size_t i = 1; i < kStream.size(); ++i) every.push_back(i);
  const auto bytes = parse_in_pieces(kStream, every);
  ASSERT_EQ(bytes.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(bytes[i].data, whole[i].data);
}

TEST(SseParser, CrlfSplitBetweenChunksEndsOneLine) {
  // "\r" | "\n\r\n": the LF after a CR in the previous chunk is the same line end.
  const auto events = parse_in_pieces("data: a\r\n\r\ndata: b\r\n\r\n", {8});
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].data, "a");
  EXPECT_EQ(events[1].data, "b");
}

TEST(SseParser, DropsAnEventTheStreamDidNotFinish) {
  const auto events = parse_in_pieces("data: complete\n\ndata: cut off", {});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "complete");
}

TEST(SseParser, IgnoresBlankEventsAndCommentsAndSkipsAByteOrderMark) {
  const auto events = parse_in_pieces("\xEF\xBB\xBF\n\n: comment\n\nretry: 10\n\ndata\n\n", {2});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "");  // "data" with no colon is a field with an empty value
}

TEST(SseParser, StopsWhenTheHandlerSaysSo) {
  int seen = 0;
  SseParser parser([&](const SseEvent&) { return ++seen < 2; });
  EXPECT_FALSE(parser.feed("data: 1\n\ndata: 2\n\ndata: 3\n\n"));
  EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace ghostline::daemon::remote
