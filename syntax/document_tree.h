// Syntax trees of open documents, kept up to date incrementally: each edit is applied to the old
// tree (ts_tree_edit) and the text reparsed with it, so a keystroke costs a reparse of the
// changed region only. Trees are owned by the I/O thread; the engine thread gets snapshots.
#pragma once

#include "syntax/language.h"

#include <tree_sitter/api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ghostline::syntax {

struct TreeSnapshot {           // an immutable tree for one document version (engine thread)
  const Language* language = nullptr;
  std::shared_ptr<TSTree> tree; // a ts_tree_copy, deleted with ts_tree_delete
  int64_t version = 0;
  TSNode root() const;
};

// The point (row, byte column) of `byte` in `text`, of which `tree` is the tree: counted from the
// nearest node before it rather than from the start of the text.
TSPoint point_at(const TSTree* tree, std::string_view text, uint32_t byte);

class DocumentTree {            // one open document; I/O thread only
 public:
  DocumentTree(const Language& language, std::string text);   // parses
  // text[begin, end) (bytes) replaced by new_text: ts_tree_edit with the byte offsets and the
  // points (row, byte column) of start, old end and new end, then a reparse with the old tree.
  // Throws std::out_of_range when the range is not inside the text.
  void edit(size_t begin, size_t end, std::string_view new_text);
  const std::string& text() const;
  const TSTree* tree() const;
  const Language& language() const;
  std::shared_ptr<const TreeSnapshot> snapshot(int64_t version) const;
  double last_parse_ms() const;

 private:
  struct ParserDeleter {
    void operator()(TSParser* p) const { ts_parser_delete(p); }
  };
  struct TreeDeleter {
    void operator()(TSTree* t) const { ts_tree_delete(t); }
  };
  void parse(const TSTree* old_tree);

  const Language* language_;
  std::string text_;
  std::unique_ptr<TSParser, ParserDeleter> parser_;
  std::unique_ptr<TSTree, TreeDeleter> tree_;
  double last_parse_ms_ = 0;
};

class DocumentTrees {           // the trees of a session's open documents; I/O thread only
 public:
  // Documents whose language has no grammar are not tracked (snapshot() returns nullptr).
  void open(const std::string& key, std::string_view language_id, std::string_view uri,
            std::string text);
  // Edits of untracked documents are ignored.
  void edit(const std::string& key, size_t begin, size_t end, std::string_view new_text);
  void close(const std::string& key);
  const DocumentTree* find(const std::string& key) const;
  std::shared_ptr<const TreeSnapshot> snapshot(const std::string& key, int64_t version) const;
  size_t size() const;

 private:
  std::unordered_map<std::string, std::unique_ptr<DocumentTree>> trees_;
};

}  // namespace ghostline::syntax
