#include "cache/completion_memory.h"

#include <algorithm>

namespace ghostline::cache {

CompletionMemory::CompletionMemory(size_t per_document, size_t documents)
    : per_document_(std::max<size_t>(1, per_document)),
      documents_(std::max<size_t>(1, documents)) {}

void CompletionMemory::remember(std::string_view document, std::shared_ptr<const std::string> text,
                                size_t cursor, std::string_view completion) {
  if (!text || completion.empty() || cursor > text->size()) return;
  std::lock_guard lock(mutex_);
  auto it = by_document_.find(std::string(document));
  if (it == by_document_.end()) {
    if (by_document_.size() >= documents_) {
      auto oldest = std::min_element(
          by_document_.begin(), by_document_.end(),
          [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
      by_document_.erase(oldest);
    }
    it = by_document_.emplace(std::string(document), Document{}).first;
  }
  Document& doc = it->second;
  doc.used = ++clock_;
  Entry entry{std::move(text), cursor, std::string(completion)};
  // The same state completed again replaces its older entry.
  std::erase_if(doc.entries, [&](const Entry& e) {
    return e.cursor == entry.cursor && (e.text == entry.text || *e.text == *entry.text);
  });
  doc.entries.push_front(std::move(entry));
  if (doc.entries.size() > per_document_) doc.entries.pop_back();
  ++stats_.remembered;
}

std::optional<CompletionMemory::Recalled> CompletionMemory::recall(std::string_view document,
                                                                   std::string_view text,
                                                                   size_t cursor) {
  std::lock_guard lock(mutex_);
  ++stats_.recalls;
  if (cursor > text.size()) return std::nullopt;
  auto it = by_document_.find(std::string(document));
  if (it == by_document_.end()) return std::nullopt;
  const std::string_view before = text.substr(0, cursor), after = text.substr(cursor);
  for (const Entry& e : it->second.entries) {
    if (after != e.after() || before.size() < e.cursor) continue;
    const size_t typed = before.size() - e.cursor;
    if (typed >= e.completion.size()) continue;
    if (before.compare(0, e.cursor, e.before()) != 0) continue;
    if (before.substr(e.cursor) != std::string_view(e.completion).substr(0, typed)) continue;
    it->second.used = ++clock_;
    ++stats_.hits;
    return Recalled{e.completion.substr(typed), typed};
  }
  return std::nullopt;
}

void CompletionMemory::forget(std::string_view document) {
  std::lock_guard lock(mutex_);
  by_document_.erase(std::string(document));
}

CompletionMemoryStats CompletionMemory::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace ghostline::cache
