#include "lsp/completer.h"

namespace ghostline::lsp {

std::optional<std::string_view> typed_at_cursor(const CompletionRequest& before,
                                                std::string_view text) {
  const std::string_view old = before.text;
  const size_t cursor = before.cursor;
  if (cursor > old.size() || text.size() < old.size()) return std::nullopt;
  const size_t added = text.size() - old.size();
  if (text.substr(0, cursor) != old.substr(0, cursor)) return std::nullopt;
  if (text.substr(cursor + added) != old.substr(cursor)) return std::nullopt;
  return text.substr(cursor, added);
}

bool continues(const CompletionRequest& before, const CompletionRequest& after) {
  if (after.uri != before.uri) return false;
  auto typed = typed_at_cursor(before, after.text);
  return typed && after.cursor == before.cursor + typed->size();
}

}  // namespace ghostline::lsp
