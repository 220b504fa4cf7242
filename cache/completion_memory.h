// Completions made a moment ago, kept per document so that a user who types the start of the
// one just shown is answered from memory, without the model: typing "ret" into a shown
// "return x" is answered "urn x" at once. Entries are matched on the whole text around the
// cursor, so any other edit makes them miss. Thread-safe: the engine thread remembers, the I/O
// thread recalls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ghostline::cache {

struct CompletionMemoryStats {
  uint64_t remembered = 0, recalls = 0, hits = 0;
};

class CompletionMemory {
 public:
  // Keeps the latest `per_document` completions of each of the latest `documents` documents.
  explicit CompletionMemory(size_t per_document = 4, size_t documents = 32);

  // `completion` was made for `text` with the cursor at byte `cursor` (inserted there). The
  // text is kept shared, not copied.
  void remember(std::string_view document, std::shared_ptr<const std::string> text, size_t cursor,
                std::string_view completion);
  void remember(std::string_view document, std::string_view text, size_t cursor,
                std::string_view completion) {
    remember(document, std::make_shared<const std::string>(text), cursor, completion);
  }

  struct Recalled {
    std::string rest;  // what is left of the completion after the typed part
    size_t typed = 0;  // bytes of the completion the user has typed
  };
  // The newest remembered completion of `document` that the state (text, cursor) continues:
  // the text after the cursor is unchanged, the text before it is the remembered one plus a
  // typed start of the completion, and something of the completion is left.
  std::optional<Recalled> recall(std::string_view document, std::string_view text, size_t cursor);

  void forget(std::string_view document);
  CompletionMemoryStats stats() const;

 private:
  struct Entry {
    std::shared_ptr<const std::string> text;
    size_t cursor = 0;
    std::string completion;
    std::string_view before() const { return std::string_view(*text).substr(0, cursor); }
    std::string_view after() const { return std::string_view(*text).substr(cursor); }
  };
  struct Document {
    std::deque<Entry> entries;  // newest first
    uint64_t used = 0;
  };

  size_t per_document_, documents_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Document> by_document_;
  uint64_t clock_ = 0;
  CompletionMemoryStats stats_;
};

}  // namespace ghostline::cache
