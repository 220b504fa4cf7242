// A CompletionResult shaped as the reply to the request that asked for it: ranges in the
// session's encoding, the plain completion's word before the cursor, the accepted command.
#include "lsp/completion_reply.h"

#include <gtest/gtest.h>

#include <string>

namespace ghostline::lsp {
namespace {

using nlohmann::json;

CompletionResult insert(std::string text, size_t at) {
  CompletionResult r;
  r.insert_text = std::move(text);
  r.replace_begin = r.replace_end = at;
  return r;
}

TEST(CompletionReply, EmptyRepliesAreEmptyListsOfTheirStyle) {
  EXPECT_EQ(empty_completion_reply(CompletionStyle::Inline), json::parse(R"({"items":[]})"));
  EXPECT_EQ(empty_completion_reply(CompletionStyle::List),
            json::parse(R"({"isIncomplete":true,"items":[]})"));
}

TEST(CompletionReply, InlineItemCoversTheCursorAndTheReplacedRangeInTheSessionsEncoding) {
  // "é" is two bytes, one UTF-16 unit; "😀" four bytes, two UTF-16 units.
  const TextDocument doc("file:///a.py", "python", 3, "x = 1\ns = \"é😀\" + ab)\n");
  const size_t cursor = doc.text().find("ab") + 2;
  CompletionResult r = insert("c", cursor);
  r.replace_end = cursor + 1;  // the ")" is replaced too
  const InlineCompletionList list =
      inline_completion_reply(r, doc, cursor, PositionEncoding::Utf16, 42);
  ASSERT_EQ(list.items.size(), 1u);
  const InlineCompletionItem& item = list.items[0];
  EXPECT_EQ(item.insert_text, "c");
  EXPECT_EQ(item.range, (Range{{1, 14}, {1, 15}}));
  ASSERT_TRUE(item.command);
  EXPECT_EQ(item.command->command, "ghostline.completionAccepted");
  EXPECT_EQ(item.command->arguments, json::array({42}));
  // The same reply for a UTF-8 session counts bytes.
  EXPECT_EQ(inline_completion_reply(r, doc, cursor, PositionEncoding::Utf8, 42).items[0].range,
            (Range{{1, 17}, {1, 18}}));
  // A replacement that starts before the cursor widens the range to the left.
  r.replace_begin = cursor - 2;
  EXPECT_EQ(inline_completion_reply(r, doc, cursor, PositionEncoding::Utf16, 1).items[0].range,
            (Range{{1, 12}, {1, 15}}));
}

TEST(CompletionReply, ListItemStartsWithTheWordBeforeTheCursor) {
  const TextDocument doc("file:///a.py", "python", 1, "value = compute_to");
  const size_t cursor = doc.text().size();
  const CompletionList list = completion_list_reply(insert("tal(items)\nreturn value", cursor), doc,
                                                    cursor, PositionEncoding::Utf16);
  EXPECT_TRUE(list.is_incomplete);
  ASSERT_EQ(list.items.size(), 1u);
  const CompletionItem& item = list.items[0];
  EXPECT_EQ(item.label, "compute_total(items)");
  EXPECT_EQ(item.filter_text, "compute_total(items)\nreturn value");
  EXPECT_EQ(item.text_edit.new_text, item.filter_text);
  EXPECT_EQ(item.text_edit.range, (Range{{0, 8}, {0, 18}}));
  EXPECT_EQ(item.detail, "ghostline");
}

TEST(CompletionReply, ListLabelsAreCutAtEightyCharacters) {
  const TextDocument doc("file:///a.txt", "plaintext", 1, "(");
  const CompletionList list =
      completion_list_reply(insert(std::string(100, 'x'), 1), doc, 1, PositionEncoding::Utf16);
  EXPECT_EQ(list.items[0].label, std::string(77, 'x') + "...");
  EXPECT_EQ(list.items[0].filter_text, std::string(100, 'x'));
  // No word before the cursor: the edit starts at the cursor.
  EXPECT_EQ(list.items[0].text_edit.range, (Range{{0, 1}, {0, 1}}));
}

TEST(CompletionReply, UpdatedNotificationNamesTheDocumentVersionAndCursor) {
  const TextDocument doc("file:///b.rs", "rust", 9, "fn main() {\n    le\n}\n");
  const size_t cursor = doc.text().find("le") + 2;
  const json params = completion_updated_params(doc, cursor, PositionEncoding::Utf16);
  EXPECT_EQ(params, json::parse(R"({"textDocument":{"uri":"file:///b.rs"},"version":9,
                                     "position":{"line":1,"character":6}})"));
}

}  // namespace
}  // namespace ghostline::lsp
