// The documents a session has open. Applies the client's changes and tells its listeners what
// each change did, as a byte range of the text before it and the text put there, so that no
// one has to find out by comparing whole documents (the scheduler's typing-through test, the
// syntax trees' incremental reparse). I/O thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lsp/protocol.h"
#include "lsp/text_document.h"

namespace ghostline::lsp {

// One change: text[begin, end) of the document before it was replaced by new_text, making
// version `version`.
struct DocumentEdit {
  std::string uri;
  int64_t version = 0;
  size_t begin = 0, end = 0;
  std::string new_text;
};

class DocumentStore {
 public:
  // Called with the document and all edits of one didChange, in order (offsets of each are in
  // the text the ones before it left).
  using Listener = std::function<void(const std::string& uri, std::span<const DocumentEdit> edits)>;
  void add_listener(Listener listener) { listeners_.push_back(std::move(listener)); }

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
  void clear() { documents_.clear(); }

  // The document as it is now; requests keep this snapshot while the text changes on.
  std::shared_ptr<const TextDocument> find(const std::string& uri) const;
  size_t size() const { return documents_.size(); }
  std::vector<std::string> uris() const;

 private:
  std::map<std::string, std::shared_ptr<TextDocument>> documents_;
  std::vector<Listener> listeners_;
};

}  // namespace ghostline::lsp
