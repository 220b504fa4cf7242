#include "lsp/protocol.h"

#include <gtest/gtest.h>

namespace ghostline::lsp {
namespace {

using nlohmann::json;

TEST(Protocol, ParamsRoundTripThroughJson) {
  DidChangeTextDocumentParams change;
  change.text_document = {.uri = "file:///a", .version = 3};
  change.content_changes = {{.range = Range{{1, 2}, {1, 4}}, .text = "xy"}, {.range = std::nullopt, .text = "all"}};
  const auto back = json(change).get<DidChangeTextDocumentParams>();
  EXPECT_EQ(back.text_document.uri, "file:///a");
  EXPECT_EQ(back.text_document.version, 3);
  ASSERT_EQ(back.content_changes.size(), 2u);
  EXPECT_EQ(back.content_changes[0].range, (Range{{1, 2}, {1, 4}}));
  EXPECT_FALSE(back.content_changes[1].range);
  EXPECT_EQ(back.content_changes[1].text, "all");

  const InlineCompletionParams inline_params{
      .text_document = {.uri = "u"},
      .position = {4, 5},
      .trigger_kind = InlineCompletionTriggerKind::Invoked,
      .selected = SelectedCompletionInfo{Range{{4, 0}, {4, 5}}, "print"}};
  const auto p = json(inline_params).get<InlineCompletionParams>();
  EXPECT_EQ(p.position, (Position{4, 5}));
  EXPECT_EQ(p.trigger_kind, InlineCompletionTriggerKind::Invoked);
  ASSERT_TRUE(p.selected);
  EXPECT_EQ(p.selected->text, "print");
}

TEST(Protocol, WrongShapesNameTheField) {
  auto message_of = [](const json& j) {
    try {
      (void)j.get<InlineCompletionParams>();
    } catch (const InvalidParams& e) {
      return e.message;
    }
    return std::string("no error");
  };
  EXPECT_EQ(message_of(json::array()), "params must be an object");
  EXPECT_EQ(message_of({{"position", {{"line", 0}, {"character", 0}}}}), "missing 'textDocument'");
  EXPECT_EQ(
      message_of({{"textDocument", {{"uri", 1}}}, {"position", {{"line", 0}, {"character", 0}}}}),
      "'uri' must be a string");
  EXPECT_EQ(message_of(
                {{"textDocument", {{"uri", "u"}}}, {"position", {{"line", 0}, {"character", -1}}}}),
            "position must not be negative");
}

TEST(Protocol, ResultsHaveTheSpecsFieldNames) {
  const json list =
      InlineCompletionList{{{.insert_text = "x + 1", .range = Range{{0, 1}, {0, 1}}}}};
  EXPECT_EQ(list, json::parse(
                      R"({"items":[{"insertText":"x + 1","range":{"start":{"line":0,"character":1},
                                  "end":{"line":0,"character":1}}}]})"));
  const json empty = CompletionList{};
  EXPECT_EQ(empty, json::parse(R"({"isIncomplete":true,"items":[]})"));
}

}  // namespace
}  // namespace ghostline::lsp
