#include "lsp/document_store.h"

#include <algorithm>

namespace ghostline::lsp {
namespace {

// The smallest replacement turning `before` into `after`: common prefix and suffix kept.
DocumentEdit minimal_edit(std::string_view before, std::string_view after) {
  const size_t n = std::min(before.size(), after.size());
  size_t prefix = 0;
  while (prefix < n && before[prefix] == after[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < n - prefix &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix])
    ++suffix;
  DocumentEdit e;
  e.begin = prefix;
  e.end = before.size() - suffix;
  e.new_text = std::string(after.substr(prefix, after.size() - suffix - prefix));
  return e;
}

}  // namespace

bool DocumentStore::open(const std::string& uri, const std::string& language_id, int64_t version,
                         std::string text) {
  auto [it, added] = documents_.insert_or_assign(
      uri, std::make_shared<TextDocument>(uri, language_id, version, std::move(text)));
  for (DocumentListener* listener : listeners_) listener->opened(key(uri), *it->second);
  return added;
}

DocumentStore::ChangeResult DocumentStore::change(
    const std::string& uri, int64_t version,
    std::span<const TextDocumentContentChangeEvent> changes, PositionEncoding encoding,
    Range* out_of_range) {
  auto it = documents_.find(uri);
  if (it == documents_.end()) return ChangeResult::NotOpen;
  // Copy on write: a running request may still hold the previous text, and a later change of
  // several may fail (a single change that fails leaves the text as it was).
  const bool copy = it->second.use_count() > 1 || changes.size() > 1;
  auto updated = copy ? std::make_shared<TextDocument>(*it->second) : it->second;
  std::vector<DocumentEdit> edits;
  edits.reserve(changes.size());
  for (const auto& change : changes) {
    DocumentEdit edit;
    if (change.range) {
      auto b = updated->offset_of(change.range->start, encoding);
      auto e = updated->offset_of(change.range->end, encoding);
      if (b && e && *b <= *e) {
        edit.begin = *b;
        edit.end = *e;
        edit.new_text = change.text;
      }
    } else {
      edit = minimal_edit(updated->text(), change.text);
    }
    if (!updated->apply_change(change.range, change.text, encoding)) {
      if (out_of_range) *out_of_range = *change.range;
      return ChangeResult::OutOfRange;
    }
    edit.uri = uri;
    edit.version = version;
    edits.push_back(std::move(edit));
  }
  updated->set_version(version);
  it->second = std::move(updated);
  for (DocumentListener* listener : listeners_) listener->edited(key(uri), *it->second, edits);
  return ChangeResult::Applied;
}

bool DocumentStore::close(const std::string& uri) {
  if (documents_.erase(uri) == 0) return false;
  for (DocumentListener* listener : listeners_) listener->closed(key(uri));
  return true;
}

void DocumentStore::clear() {
  for (const std::string& uri : uris()) close(uri);
}

std::shared_ptr<const TextDocument> DocumentStore::find(const std::string& uri) const {
  auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : it->second;
}

std::vector<std::string> DocumentStore::uris() const {
  std::vector<std::string> out;
  out.reserve(documents_.size());
  for (const auto& [uri, doc] : documents_) out.push_back(uri);
  return out;
}

}  // namespace ghostline::lsp
