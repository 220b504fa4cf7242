// The documents a session has open. Applies the client's changes and tells its listeners what
// each change did, as a byte range of the text before it and the text put there, so that no
// one has to find out by comparing whole documents (the scheduler's typing-through test, the
// syntax trees' incremental reparse), and when a document is opened or closed, so that what is
// kept per document is dropped with it. I/O thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lsp/protocol.h"
#include "lsp/text_document.h"

namespace ghostline::lsp {

// Per-document state (syntax tree, speculation statistics, completion memory) is kept under one
// key: the session's and the URI, so that two editors on one daemon never share it.
using DocumentKey = std::string;

// One change: text[begin, end) of the document before it was replaced by new_text, making
// version `version`.
struct DocumentEdit {
  std::string uri;
  int64_t version = 0;
  size_t begin = 0, end = 0;
  std::string new_text;
};

// Hears of every document a store opens, changes and closes, under the document's key. Called
// on the I/O thread: must be cheap (in proportion to the edit).
class DocumentListener {
 public:
  virtual ~DocumentListener() = default;
  // A document opened (or opened again, replacing the one of that key).
  virtual void opened(const DocumentKey& key, const TextDocument& document) = 0;
  // All edits of one didChange, in order (the offsets of each are in the text the ones before
  // it left); `document` is the document after them.
  virtual void edited(const DocumentKey& key, const TextDocument& document,
                      std::span<const DocumentEdit> edits) = 0;
  virtual void closed(const DocumentKey& key) = 0;
};

class DocumentStore {
 public:
  // `key_prefix` makes the keys of this store's documents unique among the stores of a daemon
  // (each session has one).
  explicit DocumentStore(std::string key_prefix = {}) : key_prefix_(std::move(key_prefix)) {}
  DocumentKey key(const std::string& uri) const { return key_prefix_ + uri; }
  // The listener must outlive the store or stay until clear() has run.
  void add_listener(DocumentListener& listener) { listeners_.push_back(&listener); }

  // Opens (or, returning false, replaces) a document.
  bool open(const std::string& uri, const std::string& language_id, int64_t version,
            std::string text);

  enum class ChangeResult { Applied, NotOpen, OutOfRange };
  // Applies the changes in order and then sets the version. A change whose range is outside the
  // document leaves it as it was before the first change (out_of_range says which); listeners
  // hear only of applied changes. A change without range becomes the smallest edit that turns
  // the old text into the new one.
  ChangeResult change(const std::string& uri, int64_t version,
                      std::span<const TextDocumentContentChangeEvent> changes,
                      PositionEncoding encoding, Range* out_of_range = nullptr);
  bool close(const std::string& uri);
  // Closes every document.
  void clear();

  // The document as it is now; requests keep this snapshot while the text changes on.
  std::shared_ptr<const TextDocument> find(const std::string& uri) const;
  size_t size() const { return documents_.size(); }
  std::vector<std::string> uris() const;

 private:
  std::string key_prefix_;
  std::map<std::string, std::shared_ptr<TextDocument>> documents_;
  std::vector<DocumentListener*> listeners_;
};

}  // namespace ghostline::lsp
