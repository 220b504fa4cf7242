#include "lsp/completion_reply.h"

#include <algorithm>
#include <string>

#include "base/text.h"

namespace ghostline::lsp {

using nlohmann::json;

namespace {

// The range a completion replaces: the cursor, widened to the result's replacement range.
Range replaced_range(const CompletionResult& r, const TextDocument& doc, size_t cursor,
                     PositionEncoding encoding) {
  size_t begin = std::min(r.replace_begin, cursor), end = std::max(r.replace_end, cursor);
  return {doc.position_of(begin, encoding), doc.position_of(end, encoding)};
}

}  // namespace

json empty_completion_reply(CompletionStyle style) {
  return style == CompletionStyle::Inline ? json(InlineCompletionList{}) : json(CompletionList{});
}

InlineCompletionList inline_completion_reply(const CompletionResult& r, const TextDocument& doc,
                                             size_t cursor, PositionEncoding encoding,
                                             uint64_t completion_id) {
  return {{{.insert_text = r.insert_text,
            .range = replaced_range(r, doc, cursor, encoding),
            .command = Command{.title = "Ghostline: completion accepted",
                               .command = "ghostline.completionAccepted",
                               .arguments = json::array({completion_id})}}}};
}

CompletionList completion_list_reply(const CompletionResult& r, const TextDocument& doc,
                                     size_t cursor, PositionEncoding encoding) {
  const size_t begin = std::min(r.replace_begin, cursor);
  const std::string& text = doc.text();
  size_t word = begin;
  while (word > 0 && is_identifier_byte(text[word - 1])) --word;
  std::string word_text = text.substr(word, begin - word);
  std::string new_text = word_text + r.insert_text;
  std::string label = new_text.substr(0, new_text.find('\n'));
  if (label.size() > 80) label = label.substr(0, 77) + "...";
  const Range edit_range{doc.position_of(word, encoding),
                         replaced_range(r, doc, cursor, encoding).end};
  return {.items = {{.label = label,
                     .filter_text = new_text,
                     .text_edit = {.range = edit_range, .new_text = new_text},
                     .detail = "ghostline"}}};
}

CompletionUpdatedParams completion_updated_params(const TextDocument& doc, size_t cursor,
                                                  PositionEncoding encoding) {
  return {.text_document = {.uri = doc.uri()},
          .version = doc.version(),
          .position = doc.position_of(cursor, encoding)};
}

}  // namespace ghostline::lsp
